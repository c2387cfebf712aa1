/* mrcd's scheduler slice (mrcd.conf sched_slice_us, daemon/core/core.c;
 * docs/step.md "Urgent dispatch"): a core started with it leaves its loop
 * thread on that slice, so that mrcd, woken by a post or an urgent
 * datagram, preempts a task on the default slice instead of waiting it
 * out (EEVDF, Linux 6.12+).
 *   slice_applied: 100 us: the thread's sched_runtime reads 100,000 ns
 *     while the core runs, the kernel's own again after it;
 *   slice_configured: 250 us reads 250,000 ns;
 *   slice_off: 0 (the default) leaves the thread's slice as it was.
 * On a kernel without custom slices (before 6.12) sched_runtime reads the
 * base slice whatever was asked: the tests skip.  The core runs in
 * loopback mode on a port drawn from the seed (printed on failure). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <cmocka.h>

#include "common/sched_slice.h"
#include "daemon/core/mrcd.h"
#include "tests/support/mrcd_spawn.h"

static unsigned seed;
static struct mrcd_keydir kd;

/* The calling thread's slice (ns), as sched_getattr reports it. */
static uint64_t slice_ns(void)
{
	struct mrc__slice_attr a = { .size = sizeof(a) };
	assert_int_equal(syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0), 0);
	return a.runtime;
}

static struct mrcd *core_up(uint32_t slice_us)
{
	struct mrcd_cfg c;
	char err[512] = "";
	mrcd_cfg_default(&c);
	snprintf(c.key_file, sizeof(c.key_file), "%s", kd.key);
	if (slice_us != UINT32_MAX)
		c.sched_slice_us = slice_us;
	struct mrcd *d = NULL;
	int rc = -1;
	/* Another process may hold a port: a few tries from the seed. */
	for (int t = 0; t < 8 && rc; t++) {
		c.port = 20000 + (seed * 7919u + (unsigned)t * 104729u) % 40000;
		assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), 0);
		rc = mrcd_core_new(&c, &d, err, sizeof(err));
	}
	if (rc)
		fail_msg("core (seed %u): %s", seed, err);
	return d;
}

static void core_down(struct mrcd *d)
{
	mrcd_core_free(d);
	ev_loop_destroy(EV_DEFAULT);   /* the next core starts on a fresh loop */
}

/* The kernel's base slice, read before any core ran; 0 when this kernel
 * has no custom slices (setup). */
static uint64_t base_ns;

static void slice_case(uint32_t us, uint64_t want_ns)
{
	if (!base_ns)
		skip();
	assert_int_equal(slice_ns(), base_ns);
	struct mrcd *d = core_up(us);
	uint64_t got = slice_ns();
	if (got != want_ns)
		fail_msg("seed %u: sched_slice_us %d: the loop thread's slice is %llu ns, want %llu", seed,
			 us == UINT32_MAX ? -1 : (int)us, (unsigned long long)got, (unsigned long long)want_ns);
	core_down(d);
	assert_int_equal(slice_ns(), base_ns);   /* given back */
}

static void slice_applied(void **state) { (void)state; slice_case(100, 100000); }
static void slice_configured(void **state) { (void)state; slice_case(250, 250000); }
static void slice_off(void **state) { (void)state; slice_case(UINT32_MAX, base_ns); }

static int setup(void **state)
{
	(void)state;
	const char *e = getenv("MRC_TEST_SEED");
	seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();
	if (mrcd_keydir_make(&kd, "slice"))
		return -1;
	mrcd_log_level = MRCD_LOG_WARNING;
	/* Custom slices exist when asking for one changes what reads back. */
	struct mrc__slice_attr a = { .size = sizeof(a) };
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0))
		return -1;
	uint64_t was = a.runtime;
	a.runtime = was == 300000 ? 400000 : 300000;
	if (syscall(SYS_sched_setattr, 0, &a, 0) == 0 && slice_ns() == a.runtime)
		base_ns = was;
	a.runtime = 0;
	syscall(SYS_sched_setattr, 0, &a, 0);
	if (base_ns && slice_ns() != base_ns)
		base_ns = 0;   /* 0 does not give the default back: not the kernel tested */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mrcd_keydir_remove(&kd);
	return 0;
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(slice_applied),
		cmocka_unit_test(slice_configured),
		cmocka_unit_test(slice_off),
	};
	return cmocka_run_group_tests(t, setup, teardown);
}
