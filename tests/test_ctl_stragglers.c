/* `mrcctl stragglers` against a real loopback mrcd (tests/support/
 * mrcd_spawn; docs/coll.md "Stragglers"):
 *   - test_filed_with_peer_uid: a record a client files with
 *     mrc_straggler_file shows in the verb with every field it sent and
 *     the uid and pid mrcd read from the client's socket;
 *   - test_uid_not_settable: a STRAGGLER message carrying 8 more bytes (a
 *     uid of 0 appended) is refused (-EBADMSG) and nothing is filed; as
 *     root, a child acting as uid nobody files a record and it shows with
 *     uid 65534 and the child's pid, not root's;
 *   - test_ring_bound: records filed back to back until the per-client
 *     rate bound refuses one (-EAGAIN, counted): more than the ring
 *     holds got in; the uid's ring keeps the last 32 accepted, oldest
 *     dropped (counted);
 *   - test_coll_files: end to end, 2 ranks of libmrc-coll, rank 1
 *     sleeping before one call of each step: every verdict that names
 *     someone is in `stragglers`, once from rank 0 and once from the named
 *     rank (when not rank 0), with the verdict, call and communicator id
 *     the ranks got.
 * Skipped when build/bin/mrcd has not been built. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "codec/climsg.h"
#include "codec/operjson.h"
#include "lib/internal.h"
#include "mrc/mrc.h"
#include "mrc/coll.h"
#include "tests/support/coll_ranks.h"
#include "tests/support/mrcd_spawn.h"
#include "tests/support/nccl_pairs.h"
#include "tests/support/skip.h"

#define NEED_DAEMON() do { if (!mrcd_spawn_available()) \
	MRC_SKIP("%s is not built", mrcd_spawn_bin()); } while (0)

#define NOBODY 65534
#define NOGROUP 65534
#define RING 32                    /* daemon/clients/strag.c STRAG_RING */

static struct mrcd_proc d;
static const struct mrcd_proc *ctl_proc;   /* the daemon stragglers() asks */

static int stop_daemon(void **state)
{
	(void)state;
	mrcd_spawn_stop(&d);
	return 0;
}

/* The stragglers verb's result (the caller decrefs). */
static json_t *stragglers(void)
{
	return nccl_pairs_ctl(ctl_proc ? ctl_proc : &d, MRC_OPER_STRAGGLERS);
}

static long long num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	if (!json_is_integer(v))
		fail_msg("no integer '%s'", k);
	return json_integer_value(v);
}

/* A hand-built request on ctx's socket: the reply's status. */
static struct mrc_cli_msg raw_rep(struct mrc_ctx *ctx, const void *msg, size_t len, uint8_t *buf);
static int raw_status(struct mrc_ctx *ctx, const void *msg, size_t len)
{
	uint8_t buf[MRC_CLI_MSG_MAX];
	return raw_rep(ctx, msg, len, buf).status;
}

/* Through mrc_straggler_file (the public record, mrc.h). */
static struct mrc_straggler_rec net_rec(uint64_t call)
{
	return (struct mrc_straggler_rec){ .size = sizeof(struct mrc_straggler_rec),
		.comm = 0xabcdef0123456789ull, .call = call,
		.cause = MRC_STRAG_NETWORK, .rank = 3, .host = 5, .peer_rank = 1,
		.peer_host = 2, .qpn = 17, .plane = 1, .rank_sends = 1, .call_us = 40000,
		.late_us = 900, .typical_us = 80 };
}

/* The same on the wire (codec/climsg.h), for hand-built messages. */
static struct mrc_cli_straggler net_cli(uint64_t call)
{
	return (struct mrc_cli_straggler){ .comm = 0xabcdef0123456789ull, .call = call,
		.cause = MRC_CLI_STRAG_NETWORK, .rank = 3, .host = 5, .peer_rank = 1,
		.peer_host = 2, .qpn = 17, .plane = 1, .rank_sends = 1, .call_us = 40000,
		.late_us = 900, .typical_us = 80 };
}

static void test_filed_with_peer_uid(void **state)
{
	(void)state;
	NEED_DAEMON();
	assert_int_equal(mrcd_spawn_start(&d, NULL), 0);
	struct mrc_ctx *ctx;
	assert_int_equal(mrc_open(d.sock, &ctx), 0);
	struct mrc_straggler_rec s = net_rec(41);
	assert_int_equal(mrc_straggler_file(ctx, &s), 0);
	struct mrc_straggler_rec c = { .size = sizeof(c), .comm = 9, .call = 42,
				       .cause = MRC_STRAG_COMPUTE, .rank = 2, .host = 6, .plane = -1,
				       .call_us = 5000, .late_us = 2000 };
	assert_int_equal(mrc_straggler_file(ctx, &c), 0);
	/* A caller's record shorter than libmrc's: refused, nothing sent. */
	c.size = 8;
	assert_int_equal(mrc_straggler_file(ctx, &c), -EINVAL);
	mrc_close(ctx);

	json_t *res = stragglers();
	json_t *a = json_object_get(res, "records");
	assert_int_equal(json_array_size(a), 2);
	assert_int_equal(num(res, "filed"), 2);
	json_t *e = json_array_get(a, 0);
	assert_int_equal(num(e, "uid"), (long long)getuid());
	assert_int_equal(num(e, "pid"), (long long)getpid());
	assert_string_equal(json_string_value(json_object_get(e, "comm")), "abcdef0123456789");
	assert_string_equal(json_string_value(json_object_get(e, "verdict")), "network");
	assert_int_equal(num(e, "call"), 41);
	assert_int_equal(num(e, "rank"), 3);
	assert_int_equal(num(e, "host"), 5);
	assert_int_equal(num(e, "peer_rank"), 1);
	assert_int_equal(num(e, "peer_host"), 2);
	assert_int_equal(num(e, "plane"), 1);
	assert_int_equal(num(e, "qpn"), 17);
	assert_int_equal(num(e, "late_us"), 900);
	assert_int_equal(num(e, "typical_us"), 80);
	assert_true(json_is_true(json_object_get(e, "rank_sends")));
	assert_non_null(json_string_value(json_object_get(e, "time")));
	e = json_array_get(a, 1);
	assert_string_equal(json_string_value(json_object_get(e, "verdict")), "compute");
	assert_int_equal(num(e, "call"), 42);
	assert_int_equal(num(e, "late_us"), 2000);
	assert_null(json_object_get(e, "qpn"));   /* no network fields */
	json_decref(res);
}

static void test_uid_not_settable(void **state)
{
	(void)state;
	NEED_DAEMON();
	int root = geteuid() == 0;
	const char *argv[] = { "--socket_group=nogroup", NULL };
	assert_int_equal(mrcd_spawn_start(&d, root ? argv : NULL), 0);
	/* A record with a uid appended: the type's size is fixed, refused. */
	struct mrc_ctx *ctx;
	assert_int_equal(mrc_open(d.sock, &ctx), 0);
	struct { struct mrc_cli_hdr h; struct mrc_cli_straggler s; uint64_t uid; } m = {
		.h = { .magic = MRC_CLI_MAGIC, .version = MRC_CLI_VERSION, .type = MRC_CLI_STRAGGLER,
		       .len = sizeof(m.s) + sizeof(m.uid), .req_id = 9 },
		.s = net_cli(1), .uid = 0 };
	assert_int_equal(raw_status(ctx, &m, sizeof(m)), -EBADMSG);
	mrc_close(ctx);
	json_t *res = stragglers();
	assert_int_equal(num(res, "filed"), 0);
	assert_int_equal(json_array_size(json_object_get(res, "records")), 0);
	json_decref(res);
	if (!root) {
		printf("not root: the second uid's part skipped\n");
		return;
	}
	chmod(d.dir, 0711);   /* the other uid reaches the socket */
	int pfd;
	pid_t pid = mrcd_spawn_fork_as(NOBODY, NOGROUP, NOGROUP, &pfd);
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mrc_ctx *cx;
		if (mrc_open(d.sock, &cx))
			_exit(91);
		struct mrc_straggler_rec s = net_rec(5);
		int rc = mrc_straggler_file(cx, &s);
		mrc_close(cx);
		_exit(rc ? 92 : 0);
	}
	close(pfd);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	res = stragglers();
	json_t *a = json_object_get(res, "records");
	assert_int_equal(json_array_size(a), 1);
	assert_int_equal(num(json_array_get(a, 0), "uid"), NOBODY);
	assert_int_equal(num(json_array_get(a, 0), "pid"), (long long)pid);
	json_decref(res);
}

static void test_ring_bound(void **state)
{
	(void)state;
	NEED_DAEMON();
	assert_int_equal(mrcd_spawn_start(&d, NULL), 0);
	struct mrc_ctx *ctx;
	assert_int_equal(mrc_open(d.sock, &ctx), 0);
	/* Back to back until the bound refuses one: a loaded machine that
	 * slows the round trips makes the run longer, not the test flaky. */
	int ok = 0, again = 0, last = -1;
	for (int i = 0; i < 1000 && !again; i++) {
		struct mrc_straggler_rec s = net_rec((uint64_t)i);
		int rc = mrc_straggler_file(ctx, &s);
		if (rc == 0)
			ok++, last = i;
		else if (rc == -EAGAIN)
			again++;
		else
			fail_msg("record %d: %d", i, rc);
	}
	mrc_close(ctx);
	printf("filed back to back: %d kept, then %d refused by the rate bound\n", ok, again);
	assert_true(again > 0);         /* the rate bound acted */
	assert_true(ok > RING);         /* the burst overfills the ring */
	json_t *res = stragglers();
	json_t *a = json_object_get(res, "records");
	assert_int_equal(json_array_size(a), RING);
	assert_int_equal(num(res, "ring"), RING);
	assert_int_equal(num(res, "filed"), ok);
	assert_int_equal(num(res, "dropped"), ok - RING);
	assert_int_equal(num(res, "rate_refused"), again);
	/* the newest kept, in order: the last one accepted ends the ring */
	assert_int_equal(num(json_array_get(a, RING - 1), "call"), last);
	for (size_t i = 1; i < RING; i++)
		assert_true(num(json_array_get(a, i), "call") > num(json_array_get(a, i - 1), "call"));
	json_decref(res);
}

#define STEPS 4
#define SLEEP_MS 60

struct step_out { struct mrc_coll_straggler rec[STEPS]; int rc[STEPS]; int slept; };

static int body_steps(struct coll_rank *r)
{
	struct step_out *o = &((struct step_out *)r->arg)[mrc_coll_rank(r->c)];
	size_t count = 4096;
	float *in = calloc(count, sizeof(float)), *out = calloc(count, sizeof(float));
	int rc = in && out ? 0 : -ENOMEM;
	for (int s = 0; !rc && s < STEPS; s++) {
		rc = mrc_coll_allreduce(r->c, in, out, count, MRC_COLL_FLOAT32, MRC_COLL_SUM);
		if (!rc && mrc_coll_rank(r->c) == 1) {
			int64_t t0 = mrcd_spawn_now_ms();
			struct timespec ts = { 0, SLEEP_MS * 1000000L };
			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
			o->slept += mrcd_spawn_now_ms() - t0 >= SLEEP_MS;
		}
		if (!rc)
			rc = mrc_coll_allreduce(r->c, in, out, count, MRC_COLL_FLOAT32, MRC_COLL_SUM);
		if (!rc)
			rc = o->rc[s] = mrc_coll_straggler(r->c, &o->rec[s]);
	}
	free(in);
	free(out);
	return rc;
}

static void test_coll_files(void **state)
{
	(void)state;
	MRCD_GROUP_NEED();
	ctl_proc = &mrcd_group.d;
	struct coll_rank R[2];
	struct step_out O[2];
	memset(O, 0, sizeof(O));
	coll_ranks_run(R, 2, body_steps, 0, O);
	coll_ranks_check_ok(R, 2);
	assert_int_equal(O[1].slept, STEPS);   /* the injection happened */
	json_t *res = stragglers();
	json_t *a = json_object_get(res, "records");
	size_t want = 0, named = 0;
	const char *comm = NULL;
	for (int s = 0; s < STEPS; s++) {
		const struct mrc_coll_straggler *x = &O[0].rec[s];
		if (x->cause == MRC_COLL_STRAG_NONE)
			continue;
		named += x->cause == MRC_COLL_STRAG_COMPUTE && x->rank == 1;
		size_t copies = x->rank == 0 ? 1 : 2, seen = 0, i;
		json_t *e;
		json_array_foreach(a, i, e) {
			if ((uint64_t)num(e, "call") != x->call)
				continue;
			seen++;
			assert_int_equal(num(e, "uid"), (long long)getuid());
			assert_int_equal(num(e, "pid"), (long long)getpid());
			assert_int_equal(num(e, "rank"), x->rank);
			assert_string_equal(json_string_value(json_object_get(e, "verdict")),
					    mrc_coll_straggler_cause_name(x->cause));
			const char *cm = json_string_value(json_object_get(e, "comm"));
			if (!comm)
				comm = cm;
			assert_string_equal(cm, comm);   /* one communicator, one id */
		}
		if (seen != copies)
			fail_msg("step %d (call %llu, rank %u): %zu records in mrcd, %zu expected", s,
				 (unsigned long long)x->call, x->rank, seen, copies);
		want += copies;
	}
	printf("%zu of %d steps named rank 1; %zu records filed\n", named, STEPS, want);
	assert_true(named > 0);
	assert_int_equal(json_array_size(a), want);
	json_decref(res);
	ctl_proc = NULL;
}

/* QP_STATS (mrc_qp_stats, the loss evidence of mrc_coll_straggler): a
 * fresh QP's counters are zero; another client's QP number is refused
 * (-ENOENT), so no client reads another's traffic. */
static void test_qp_stats(void **state)
{
	(void)state;
	NEED_DAEMON();
	assert_int_equal(mrcd_spawn_start(&d, NULL), 0);
	struct mrc_ctx *a, *b;
	struct mrc_qp *qa, *qb;
	assert_int_equal(mrc_open(d.sock, &a), 0);
	assert_int_equal(mrc_open(d.sock, &b), 0);
	assert_int_equal(mrc_create_qp(a, NULL, &qa), 0);
	assert_int_equal(mrc_create_qp(b, NULL, &qb), 0);
	struct mrc_qp_stats st = { .tx_pkts = 7, .retx = 7 };
	assert_int_equal(mrc_qp_stats(qa, &st), 0);
	assert_int_equal(st.tx_pkts, 0);
	assert_int_equal(st.retx, 0);
	assert_int_equal(mrc_qp_stats(qa, NULL), -EINVAL);
	/* b asks for a's QP by number. */
	struct { struct mrc_cli_hdr h; struct mrc_cli_qpn q; } m = {
		.h = { .magic = MRC_CLI_MAGIC, .version = MRC_CLI_VERSION, .type = MRC_CLI_QP_STATS,
		       .len = sizeof(m.q), .req_id = 5 },
		.q = { .qpn = mrc_qp_num(qa) } };
	assert_int_equal(raw_status(b, &m, sizeof(m)), -ENOENT);
	mrc_destroy_qp(qb);
	mrc_destroy_qp(qa);
	mrc_close(b);
	mrc_close(a);
}

/* A hand-built request on ctx's socket: the decoded reply, its body in buf. */
static struct mrc_cli_msg raw_rep(struct mrc_ctx *ctx, const void *msg, size_t len, uint8_t *buf)
{
	assert_int_equal(send(ctx->sock, msg, len, MSG_NOSIGNAL), (ssize_t)len);
	ssize_t n = recv(ctx->sock, buf, MRC_CLI_MSG_MAX, 0);
	assert_true(n > 0);
	struct mrc_cli_msg rep;
	assert_int_equal(mrc__cli_dec_rep(buf, (size_t)n, &rep, NULL), 0);
	return rep;
}

/* QP_STATS_N (mrc_qp_stats_n): 14 QPs in two messages (12 + 2), each
 * QP's counters as QP_STATS reads them; another client's QP number, or
 * one that is no QP, is answered -ENOENT with zero counters, beside the
 * sender's own QP in the same message; a body of another length, a count
 * out of range or QPNs past the count are refused, and the connection
 * still serves after. */
static void test_qp_stats_n(void **state)
{
	(void)state;
	NEED_DAEMON();
	enum { K = 14 };
	assert_int_equal(mrcd_spawn_start(&d, NULL), 0);
	struct mrc_ctx *a, *b;
	struct mrc_qp *qa[K], *qb;
	assert_int_equal(mrc_open(d.sock, &a), 0);
	assert_int_equal(mrc_open(d.sock, &b), 0);
	for (int i = 0; i < K; i++)
		assert_int_equal(mrc_create_qp(a, NULL, &qa[i]), 0);
	assert_int_equal(mrc_create_qp(b, NULL, &qb), 0);
	struct mrc_qp_stats st[K];
	int rc[K];
	memset(st, 0x55, sizeof(st));
	memset(rc, 0x55, sizeof(rc));
	uint32_t req0 = a->next_req;
	assert_int_equal(mrc_qp_stats_n(qa, K, st, rc), 0);
	assert_int_equal(a->next_req - req0, 2);                /* 12 + 2 */
	for (int i = 0; i < K; i++) {
		assert_int_equal(rc[i], 0);
		assert_int_equal(st[i].tx_pkts, 0);
		assert_int_equal(st[i].retx, 0);
		assert_int_equal(st[i].rto_fires, 0);
		assert_int_equal(st[i].nacks_rx, 0);
	}
	struct mrc_qp *mixed[2] = { qa[0], qb };
	assert_int_equal(mrc_qp_stats_n(mixed, 2, st, rc), -EINVAL);   /* two contexts */
	assert_int_equal(mrc_qp_stats_n(qa, 0, st, rc), -EINVAL);
	assert_int_equal(mrc_qp_stats_n(qa, 1, st, NULL), -EINVAL);

	/* b names its own QP, a's, and a number that is no QP. */
	struct { struct mrc_cli_hdr h; struct mrc_cli_qp_stats_n q; } m = {
		.h = { .magic = MRC_CLI_MAGIC, .version = MRC_CLI_VERSION, .type = MRC_CLI_QP_STATS_N,
		       .len = sizeof(m.q), .req_id = 9 },
		.q = { .n = 3, .qpn = { mrc_qp_num(qb), mrc_qp_num(qa[3]), 0xfffff0u } } };
	uint8_t buf[MRC_CLI_MSG_MAX];
	struct mrc_cli_msg r = raw_rep(b, &m, sizeof(m), buf);
	assert_int_equal(r.status, 0);
	struct mrc_cli_qp_stats_n_rep rep;
	assert_int_equal(r.body_len, sizeof(rep));
	memcpy(&rep, r.body, sizeof(rep));
	assert_int_equal(rep.n, 3);
	assert_int_equal(rep.rec[0].qpn, mrc_qp_num(qb));
	assert_int_equal(rep.rec[0].status, 0);
	static const struct mrc_cli_qp_stats_rep zero;
	for (int i = 1; i < 3; i++) {
		assert_int_equal(rep.rec[i].qpn, m.q.qpn[i]);
		assert_int_equal(rep.rec[i].status, -ENOENT);
		assert_memory_equal(&rep.rec[i].s, &zero, sizeof(zero));
	}
	/* Malformed: each refused (-EBADMSG), the client kept. */
	struct mrc_cli_qp_stats_n q0 = m.q;
	m.q.n = 0;
	assert_int_equal(raw_status(b, &m, sizeof(m)), -EBADMSG);
	m.q.n = MRC_CLI_QP_STATS_N_MAX + 1;
	assert_int_equal(raw_status(b, &m, sizeof(m)), -EBADMSG);
	m.q = q0;
	m.q.qpn[5] = mrc_qp_num(qa[5]);                         /* past n */
	assert_int_equal(raw_status(b, &m, sizeof(m)), -EBADMSG);
	m.q = q0;
	m.h.len = 8 + 3 * 4;                                    /* only n's QPNs */
	assert_int_equal(raw_status(b, &m, sizeof(m.h) + m.h.len), -EBADMSG);
	struct mrc_qp_stats one;
	assert_int_equal(mrc_qp_stats(qb, &one), 0);
	for (int i = 0; i < K; i++)
		mrc_destroy_qp(qa[i]);
	mrc_destroy_qp(qb);
	mrc_close(b);
	mrc_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_filed_with_peer_uid, stop_daemon),
		cmocka_unit_test_teardown(test_uid_not_settable, stop_daemon),
		cmocka_unit_test_teardown(test_ring_bound, stop_daemon),
		cmocka_unit_test_teardown(test_qp_stats, stop_daemon),
		cmocka_unit_test_teardown(test_qp_stats_n, stop_daemon),
	};
	const struct CMUnitTest coll[] = {
		cmocka_unit_test(test_coll_files),
	};
	int f = cmocka_run_group_tests(tests, NULL, NULL);
	return f + cmocka_run_group_tests(coll, mrcd_group_setup, mrcd_group_teardown);
}
