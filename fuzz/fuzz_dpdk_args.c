/* libFuzzer target for the dpdk datapath's option parser
 * (datapath/dpdk_args.c; datapath_args comes from mrcd.conf or the
 * command line): any bytes as the option string.  Accepted options give an
 * EAL command line that lies inside the parser's own buffer and ends with
 * NULL, and every plane's vdev string fits or is refused cleanly; refused
 * ones say why. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datapath/dpdk_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size string, so the sanitizer sees any read past its end. */
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	struct mrc__dp_dpdk_args a;
	char why[128] = "";
	int rc = mrc__dp_dpdk_args_parse(&a, s, "0-1", why, sizeof(why));
	if (rc) {
		if (rc != -EINVAL || !why[0] || !memchr(why, 0, sizeof(why)))
			abort();
		free(s);
		return 0;
	}
	if (a.argc < 1 || a.argc > MRC__DPDK_MAX_ARGS || a.argv[a.argc] ||
	    a.idle_us > 10000 || !memchr(a.pmd, 0, sizeof(a.pmd)) ||
	    !memchr(a.devargs, 0, sizeof(a.devargs)))
		abort();
	for (int i = 0; i < a.argc; i++) {
		const char *w = a.argv[i];
		if (w < a.buf || w >= a.buf + sizeof(a.buf) ||
		    !memchr(w, 0, (size_t)(a.buf + sizeof(a.buf) - w)))
			abort();
	}
	/* A vdev string into a buffer too small and into one large enough. */
	static const size_t lens[] = { 1, 16, 512 };
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		char buf[512];
		memset(buf, 'x', sizeof(buf));
		int v = mrc__dp_dpdk_vdev(buf, lens[k], &a, 3, "h0-p0l0");
		if (v == 0 && !memchr(buf, 0, lens[k]))
			abort();
		if (v && v != -ENOTSUP && v != -ENAMETOOLONG)
			abort();
	}
	free(s);
	return 0;
}
