/* One completion (get1.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/get1.h"
#include "tests/support/mrcd_spawn.h"

struct mrc_completion mrcd_get1(struct mrc_qp *qp)
{
	struct mrc_completion c;
	memset(&c, 0, sizeof(c));
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	for (;;) {
		int n = mrc_poll_cq(qp, &c, 1);
		assert_true(n >= 0);
		if (n == 1)
			return c;
		int left = (int)(end - mrcd_spawn_now_ms());
		if (left <= 0)
			fail_msg("no completion on qp %u within %d ms", mrc_qp_num(qp),
				 MRCD_SPAWN_WAIT_MS);
		int r = mrc_wait(qp, left);
		assert_true(r == 0 || r == -ETIMEDOUT);
	}
}
