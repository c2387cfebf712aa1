/* libmrc against a real mrcd on the single-host loopback fabric (no root
 * needed): memory, QPs connected out of band and by listen/accept, every
 * operation with its data checked, refused descriptors and control
 * messages, a client killed mid-transfer, and a daemon that dies under a
 * waiting client.  Skipped when build/bin/mrcd has not been built. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/get1.h"
#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#include "codec/climsg.h"
#include "mrc/mrc.h"
#include "common/prng.h"

#define WAIT_MS MRCD_SPAWN_WAIT_MS
#define MRCD_BIN mrcd_spawn_bin()
#define daemon mrcd_proc
#define now_ms mrcd_spawn_now_ms
#define wait_for mrcd_spawn_wait_for
#define daemon_stop mrcd_spawn_stop

static uint64_t seed;

/* extra: one more "--key=value" (NULL: the default --max_clients=64). */
static int daemon_start(struct daemon *d, const char *extra)
{
	const char *argv[] = { extra ? extra : "--max_clients=64", NULL };
	return mrcd_spawn_start(d, argv);
}

static int setup(void **state)
{
	if (!mrcd_spawn_available()) {
		print_message("%s not built: skipping\n", MRCD_BIN);
		*state = NULL;
		return 0;
	}
	struct daemon *d = calloc(1, sizeof(*d));
	if (daemon_start(d, NULL)) {
		free(d);
		return -1;
	}
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct daemon *d = *state;
	if (d) {
		daemon_stop(d);
		free(d);
	}
	return 0;
}

#define NEED_DAEMON(state) do { if (!*(state)) MRC_SKIP("%s is not built", MRCD_BIN); } while (0)

struct pair {
	struct mrc_ctx *ctx;
	struct mrc_qp *a, *b;
	struct mrc_mr *src, *dst;
};

static void pair_open(struct daemon *d, struct pair *p, uint64_t len)
{
	assert_int_equal(mrc_open(d->sock, &p->ctx), 0);
	assert_int_equal(mrc_alloc_mr(p->ctx, len, MRC_MR_LOCAL_READ | MRC_MR_LOCAL_WRITE, &p->src), 0);
	assert_int_equal(mrc_alloc_mr(p->ctx, len, MRC_MR_ALL, &p->dst), 0);
	assert_int_equal(mrc_create_qp(p->ctx, NULL, &p->a), 0);
	assert_int_equal(mrc_create_qp(p->ctx, NULL, &p->b), 0);
}

static void pair_connect_oob(struct pair *p)
{
	struct mrc_qp_addr la, lb;
	assert_int_equal(mrc_qp_info_get(p->a, &la), 0);
	assert_int_equal(mrc_qp_info_get(p->b, &lb), 0);
	assert_int_equal(la.qpn, mrc_qp_num(p->a));
	assert_int_equal(mrc_connect_oob(p->a, &lb), 0);
	assert_int_equal(mrc_connect_oob(p->b, &la), 0);
}

static void fill(void *buf, size_t len, uint64_t s)
{
	struct mrc_rng r;
	mrc_rng_seed(&r, s);
	uint8_t *b = buf;
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)mrc_rng_next(&r);
}

static void test_hello(void **state)
{
	NEED_DAEMON(state);
	struct daemon *d = *state;
	struct mrc_ctx *c;
	assert_int_equal(mrc_open(d->sock, &c), 0);
	struct mrc_ctx_info info;
	assert_int_equal(mrc_ctx_info(c, &info), 0);
	assert_int_equal(info.n_hosts, 1);
	assert_int_equal(info.host, 0);
	assert_true(info.max_qps > 0 && info.max_mem > 0 && info.max_ring_entries >= 8);
	mrc_close(c);
}

/* WRITE of a seeded pattern, then WRITE_IMM, SEND/RECV and ATOMIC_ADD,
 * each checked byte for byte or by value. */
static void test_ops_oob(void **state)
{
	NEED_DAEMON(state);
	struct daemon *d = *state;
	const uint64_t len = 4u << 20;
	struct pair p;
	pair_open(d, &p, len);
	pair_connect_oob(&p);
	uint8_t *src = mrc_mr_addr(p.src), *dst = mrc_mr_addr(p.dst);
	fill(src, len, seed);

	/* WRITE: 4 MiB in 4 pieces */
	for (int i = 0; i < 4; i++)
		assert_int_equal(mrc_post_write(p.a, 100 + i, mrc_mr_key(p.src), i * (len / 4),
						len / 4, mrc_mr_key(p.dst), i * (len / 4)), 0);
	for (int i = 0; i < 4; i++) {
		struct mrc_completion c = mrcd_get1(p.a);
		assert_int_equal(c.status, 0);
		assert_int_equal(c.wr_id, 100 + i);
		assert_int_equal(c.op, MRC_CQE_WRITE);
	}
	assert_memory_equal(src, dst, len);

	/* WRITE_IMM: the target QP sees the immediate */
	src[0] ^= 0xff;
	assert_int_equal(mrc_post_write_imm(p.a, 7, mrc_mr_key(p.src), 0, 4096, mrc_mr_key(p.dst),
					    0, 0xabcd1234), 0);
	struct mrc_completion c = mrcd_get1(p.a);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.op, MRC_CQE_WRITE_IMM);
	c = mrcd_get1(p.b);
	assert_int_equal(c.op, MRC_CQE_RECV_WRITE_IMM);
	assert_true(c.flags & MRC_CQE_F_IMM);
	assert_int_equal(c.imm, 0xabcd1234);
	assert_int_equal(dst[0], src[0]);

	/* SEND into a posted RECV */
	memset(dst, 0, 8192);
	assert_int_equal(mrc_post_recv(p.b, 55, mrc_mr_key(p.dst), 0, 8192), 0);
	assert_int_equal(mrc_post_send(p.a, 56, mrc_mr_key(p.src), 1000, 3000), 0);
	c = mrcd_get1(p.a);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.wr_id, 56);
	assert_int_equal(c.op, MRC_CQE_SEND);
	c = mrcd_get1(p.b);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.wr_id, 55);
	assert_int_equal(c.op, MRC_CQE_RECV);
	assert_int_equal(c.byte_len, 3000);
	assert_memory_equal(dst, src + 1000, 3000);

	/* ATOMIC_ADD on a u64 of the target region */
	uint64_t *ctr = (uint64_t *)(dst + 65536);
	*ctr = 40;
	assert_int_equal(mrc_post_atomic_add(p.a, 9, mrc_mr_key(p.dst), 65536, 2), 0);
	c = mrcd_get1(p.a);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.op, MRC_CQE_ATOMIC_ADD);
	assert_int_equal(__atomic_load_n(ctr, __ATOMIC_ACQUIRE), 42);
	mrc_close(p.ctx);
}

/* Refused descriptors come back as error completions, in posting order
 * with the good work around them, and the QP keeps working. */
static void test_bad_descriptors(void **state)
{
	NEED_DAEMON(state);
	struct daemon *d = *state;
	struct pair p;
	pair_open(d, &p, 1 << 20);
	pair_connect_oob(&p);
	uint32_t lk = mrc_mr_key(p.src), rk = mrc_mr_key(p.dst);
	assert_int_equal(mrc_post_write(p.a, 1, lk, 0, 65536, rk, 0), 0);
	assert_int_equal(mrc_post_write(p.a, 2, lk ^ 0x5a5a, 0, 100, rk, 0), 0);   /* bad key */
	assert_int_equal(mrc_post_write(p.a, 3, lk, (1 << 20) - 10, 100, rk, 0), 0); /* range */
	struct mrc_sqe raw = { .op = 99, .wr_id = 4 };
	assert_int_equal(mrc_post_sqe(p.a, &raw), 0);                             /* opcode */
	struct mrc_sqe rsv = { .op = MRC_SQE_WRITE, .wr_id = 5, .lkey = lk, .len = 8, .rkey = rk,
			       .rsvd1 = 1 };
	assert_int_equal(mrc_post_sqe(p.a, &rsv), 0);                             /* reserved */
	assert_int_equal(mrc_post_write(p.a, 6, lk, 0, 4096, rk, 4096), 0);
	int want[] = { 0, -ENOKEY, -ERANGE, -EOPNOTSUPP, -EINVAL, 0 };
	for (int i = 0; i < 6; i++) {
		struct mrc_completion c = mrcd_get1(p.a);
		assert_int_equal(c.wr_id, (uint64_t)i + 1);
		assert_int_equal(c.status, want[i]);
	}
	/* A region of another client is not ours to name. */
	struct pair o;
	pair_open(d, &o, 4096);
	assert_int_equal(mrc_post_write(p.a, 7, mrc_mr_key(o.src), 0, 16, rk, 0), 0);
	struct mrc_completion c = mrcd_get1(p.a);
	assert_int_equal(c.wr_id, 7);
	assert_int_equal(c.status, -ENOKEY);
	mrc_close(o.ctx);
	mrc_close(p.ctx);
}

/* An application's own poll loop: drain, arm, sleep on the fd, get woken
 * by the daemon's doorbell when the completion lands.  The fd is the
 * context's (one for all its QPs): a completion of either of two armed
 * QPs wakes it, and one that comes after both are armed is not lost. */
static void test_arm_fd(void **state)
{
	NEED_DAEMON(state);
	struct daemon *d = *state;
	struct pair p;
	pair_open(d, &p, 65536);
	pair_connect_oob(&p);
	assert_int_equal(mrc_qp_fd(p.a), mrc_qp_fd(p.b));
	assert_int_equal(mrc_ctx_drain(p.ctx), 0);
	assert_int_equal(mrc_arm_cq(p.a), 0);
	assert_int_equal(mrc_post_write(p.a, 3, mrc_mr_key(p.src), 0, 65536, mrc_mr_key(p.dst), 0), 0);
	struct pollfd pf = { .fd = mrc_qp_fd(p.a), .events = POLLIN };
	assert_int_equal(poll(&pf, 1, WAIT_MS), 1);
	struct mrc_completion c;
	assert_int_equal(mrc_poll_cq(p.a, &c, 1), 1);
	assert_int_equal(c.wr_id, 3);
	assert_int_equal(c.status, 0);
	/* nothing pending: armed again; a completion already there: 1 */
	assert_int_equal(mrc_ctx_drain(p.ctx), 0);
	assert_int_equal(mrc_arm_cq(p.a), 0);
	assert_int_equal(poll(&pf, 1, 0), 0);
	assert_int_equal(mrc_post_write(p.a, 4, mrc_mr_key(p.src), 0, 8, mrc_mr_key(p.dst), 0), 0);
	assert_int_equal(poll(&pf, 1, WAIT_MS), 1);
	assert_int_equal(mrc_arm_cq(p.a), 1);
	assert_int_equal(mrc_poll_cq(p.a, &c, 1), 1);
	assert_int_equal(c.wr_id, 4);
	/* Two QPs armed on the one fd: b's completion (a SEND from a into
	 * b's RECV) wakes it although a was armed after... and before. */
	assert_int_equal(mrc_ctx_drain(p.ctx), 0);
	assert_int_equal(mrc_post_recv(p.b, 5, mrc_mr_key(p.dst), 0, 64), 0);
	assert_int_equal(mrc_arm_cq(p.b), 0);
	assert_int_equal(mrc_arm_cq(p.a), 0);
	assert_int_equal(poll(&pf, 1, 0), 0);
	assert_int_equal(mrc_post_send(p.a, 6, mrc_mr_key(p.src), 0, 64), 0);
	assert_int_equal(poll(&pf, 1, WAIT_MS), 1);
	int64_t end = mrcd_spawn_now_ms() + WAIT_MS;
	int got_a = 0, got_b = 0;
	while ((!got_a || !got_b) && mrcd_spawn_now_ms() < end) {
		if (mrc_poll_cq(p.a, &c, 1) == 1) {
			assert_int_equal(c.wr_id, 6);
			got_a = 1;
		}
		if (mrc_poll_cq(p.b, &c, 1) == 1) {
			assert_int_equal(c.wr_id, 5);
			got_b = 1;
		}
	}
	assert_true(got_a && got_b);
	mrc_close(p.ctx);
}

/* MRC_WAIT_SPIN_US (read by mrc_open): mrc_wait still returns a
 * completion that comes during or after the spin, and still honours its
 * timeout with nothing pending (neither early nor stuck in the spin). */
static void test_wait_spin(void **state)
{
	NEED_DAEMON(state);
	struct daemon *d = *state;
	struct pair p;
	setenv("MRC_WAIT_SPIN_US", "200", 1);
	pair_open(d, &p, 65536);
	unsetenv("MRC_WAIT_SPIN_US");
	pair_connect_oob(&p);
	for (int i = 0; i < 20; i++) {
		assert_int_equal(mrc_post_write(p.a, 10 + i, mrc_mr_key(p.src), 0, 64,
						mrc_mr_key(p.dst), 0), 0);
		struct mrc_completion c = mrcd_get1(p.a);
		assert_int_equal(c.wr_id, 10 + i);
		assert_int_equal(c.status, 0);
	}
	int64_t t0 = now_ms();
	assert_int_equal(mrc_wait(p.a, 20), -ETIMEDOUT);
	int64_t took = now_ms() - t0;
	assert_true(took >= 19 && took < WAIT_MS);
	mrc_close(p.ctx);
}

struct acc_arg {
	struct daemon *d;
	uint32_t sid;
	struct mrc_qp_addr remote;
	int rc;
	struct mrc_ctx *ctx;
	struct mrc_qp *qp;
	int listening_fd[2];
};

static void *acceptor(void *arg)
{
	struct acc_arg *a = arg;
	a->rc = mrc_listen(a->ctx, a->sid, 4);
	char x = 1;
	if (write(a->listening_fd[1], &x, 1) != 1)
		a->rc = -EIO;
	if (a->rc == 0)
		a->rc = mrc_accept(a->qp, a->sid, 777, WAIT_MS, &a->remote);
	return NULL;
}

static void test_listen_accept(void **state)
{
	NEED_DAEMON(state);
	struct daemon *d = *state;
	struct acc_arg a = { .d = d, .sid = 4242 };
	assert_int_equal(pipe(a.listening_fd), 0);
	assert_int_equal(mrc_open(d->sock, &a.ctx), 0);
	struct mrc_mr *tgt;
	assert_int_equal(mrc_alloc_mr(a.ctx, 65536, MRC_MR_ALL, &tgt), 0);
	assert_int_equal(mrc_create_qp(a.ctx, NULL, &a.qp), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, acceptor, &a), 0);
	char x;
	assert_int_equal(read(a.listening_fd[0], &x, 1), 1);

	struct mrc_ctx *c;
	assert_int_equal(mrc_open(d->sock, &c), 0);
	struct mrc_mr *src;
	assert_int_equal(mrc_alloc_mr(c, 65536, MRC_MR_ALL, &src), 0);
	struct mrc_qp *qp;
	assert_int_equal(mrc_create_qp(c, NULL, &qp), 0);
	struct mrc_qp_addr remote;
	assert_int_equal(mrc_connect(qp, 0, 4242, mrc_mr_key(src), &remote), 0);
	pthread_join(th, NULL);
	assert_int_equal(a.rc, 0);
	assert_int_equal(remote.qpn, mrc_qp_num(a.qp));
	assert_int_equal(remote.priv, 777);
	assert_int_equal(a.remote.qpn, mrc_qp_num(qp));
	assert_int_equal(a.remote.priv, mrc_mr_key(src));

	fill(mrc_mr_addr(src), 65536, seed + 1);
	assert_int_equal(mrc_post_write_imm(qp, 1, mrc_mr_key(src), 0, 65536, mrc_mr_key(tgt), 0, 5), 0);
	struct mrc_completion cc = mrcd_get1(qp);
	assert_int_equal(cc.status, 0);
	cc = mrcd_get1(a.qp);
	assert_int_equal(cc.op, MRC_CQE_RECV_WRITE_IMM);
	assert_memory_equal(mrc_mr_addr(src), mrc_mr_addr(tgt), 65536);

	/* Nobody listens on another sid: refused, with a reason. */
	struct mrc_qp *qp2;
	assert_int_equal(mrc_create_qp(c, NULL, &qp2), 0);
	assert_int_equal(mrc_connect(qp2, 0, 4343, 0, NULL), -ECONNREFUSED);
	assert_true(strlen(mrc_last_error(c)) > 0);
	/* A second listener on the same sid is refused. */
	assert_int_equal(mrc_listen(c, 4242, 1), -EADDRINUSE);
	mrc_close(c);
	mrc_close(a.ctx);
	close(a.listening_fd[0]);
	close(a.listening_fd[1]);
}

/* Raw control messages that break the rules get an error reply with a
 * reason, and the daemon keeps serving a well-behaved client. */
static int raw_call(const char *sock, const void *msg, size_t len, struct mrc_cli_msg *m,
		    uint8_t *rbuf)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	strcpy(sa.sun_path, sock);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (send(fd, msg, len, MSG_NOSIGNAL) != (ssize_t)len)
		return -EIO;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	if (poll(&pf, 1, WAIT_MS) != 1)
		return -ETIMEDOUT;
	ssize_t n = recv(fd, rbuf, MRC_CLI_MSG_MAX, 0);
	close(fd);
	if (n <= 0)
		return -ECONNRESET;
	const char *why;
	return mrc__cli_dec_rep(rbuf, (size_t)n, m, &why);
}

static void test_bad_control(void **state)
{
	NEED_DAEMON(state);
	struct daemon *d = *state;
	struct mrc_ctx *good;
	assert_int_equal(mrc_open(d->sock, &good), 0);
	uint8_t buf[MRC_CLI_MSG_MAX], rbuf[MRC_CLI_MSG_MAX];
	struct mrc_cli_msg m;
	struct mrc_cli_hello h = { .ver_min = 1, .ver_max = 1, .name = "raw" };

	/* wrong length field */
	int n = mrc__cli_enc_req(buf, sizeof(buf), MRC_CLI_HELLO, 9, &h, sizeof(h));
	assert_true(n > 0);
	((struct mrc_cli_hdr *)buf)->len += 4;
	assert_int_equal(raw_call(d->sock, buf, (size_t)n, &m, rbuf), 0);
	assert_int_equal(m.status, -EBADMSG);
	assert_int_equal(m.hdr.req_id, 9);
	assert_true(m.reason_len > 0);

	/* unsupported version */
	mrc__cli_enc_req(buf, sizeof(buf), MRC_CLI_HELLO, 10, &h, sizeof(h));
	((struct mrc_cli_hdr *)buf)->version = 7;
	assert_int_equal(raw_call(d->sock, buf, (size_t)n, &m, rbuf), 0);
	assert_int_equal(m.status, -EPROTONOSUPPORT);

	/* a request before hello */
	struct mrc_cli_qpn q = { .qpn = 1 };
	n = mrc__cli_enc_req(buf, sizeof(buf), MRC_CLI_DESTROY_QP, 11, &q, sizeof(q));
	assert_int_equal(raw_call(d->sock, buf, (size_t)n, &m, rbuf), 0);
	assert_int_equal(m.status, -EPROTO);

	/* unknown type */
	struct mrc_cli_hdr uh = { .magic = MRC_CLI_MAGIC, .version = MRC_CLI_VERSION, .type = 0x77, .req_id = 12 };
	assert_int_equal(raw_call(d->sock, &uh, sizeof(uh), &m, rbuf), 0);
	assert_int_equal(m.status, -EOPNOTSUPP);

	/* garbage: answered, then the connection is dropped */
	memset(buf, 0xee, 64);
	assert_int_equal(raw_call(d->sock, buf, 64, &m, rbuf), 0);
	assert_int_equal(m.status, -EBADMSG);

	/* the well-behaved client is still served */
	struct mrc_qp *qp;
	assert_int_equal(mrc_create_qp(good, NULL, &qp), 0);
	/* and limits are refused clearly */
	struct mrc_qp_cfg big = { .sq_entries = 1u << 20 };
	assert_int_equal(mrc_create_qp(good, &big, &qp), -EDQUOT);
	assert_non_null(strstr(mrc_last_error(good), "limit"));
	struct mrc_qp_cfg odd = { .sq_entries = 100 };
	assert_int_equal(mrc_create_qp(good, &odd, &qp), -EINVAL);
	struct mrc_mr *mr;
	struct mrc_ctx_info info;
	mrc_ctx_info(good, &info);
	assert_int_equal(mrc_alloc_mr(good, info.max_mem + 4096, MRC_MR_ALL, &mr), -EDQUOT);
	mrc_close(good);
}

/* Counts the daemon's mappings of client memory and rings. */
static int count_maps(pid_t pid, const char *name)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int n = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, name))
			n++;
	fclose(f);
	return n;
}

struct maps_arg { pid_t pid; int want; };
static int maps_back(void *arg)
{
	struct maps_arg *a = arg;
	return count_maps(a->pid, "memfd:mrc-mr") == a->want &&
	       count_maps(a->pid, "memfd:mrcd-rings") == 0;
}

/* A client killed in the middle of a stream of WRITEs: the daemon frees
 * its QPs, rings and regions, and serves the next client. */
static void test_client_killed(void **state)
{
	NEED_DAEMON(state);
	struct daemon *d = *state;
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* never outlive a test that failed before killing us */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		struct pair p;
		if (mrc_open(d->sock, &p.ctx) ||
		    mrc_alloc_mr(p.ctx, 8 << 20, MRC_MR_ALL, &p.src) ||
		    mrc_alloc_mr(p.ctx, 8 << 20, MRC_MR_ALL, &p.dst) ||
		    mrc_create_qp(p.ctx, NULL, &p.a) || mrc_create_qp(p.ctx, NULL, &p.b))
			_exit(1);
		struct mrc_qp_addr la, lb;
		mrc_qp_info_get(p.a, &la);
		mrc_qp_info_get(p.b, &lb);
		mrc_connect_oob(p.a, &lb);
		mrc_connect_oob(p.b, &la);
		char x = 1;
		if (write(ready[1], &x, 1) != 1)
			_exit(1);
		for (uint64_t i = 0;; i++) {
			struct mrc_completion c[16];
			if (mrc_post_write(p.a, i, mrc_mr_key(p.src), 0, 8 << 20,
					   mrc_mr_key(p.dst), 0) == -ENOSPC)
				mrc_poll_cq(p.a, c, 16);
		}
	}
	char x;
	assert_int_equal(read(ready[0], &x, 1), 1);
	assert_int_equal(count_maps(d->pid, "memfd:mrc-mr"), 2);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	struct maps_arg a = { .pid = d->pid, .want = 0 };
	assert_int_equal(wait_for(maps_back, &a, WAIT_MS), 0);
	/* still serving */
	struct pair p;
	pair_open(d, &p, 65536);
	pair_connect_oob(&p);
	assert_int_equal(mrc_post_write(p.a, 1, mrc_mr_key(p.src), 0, 65536, mrc_mr_key(p.dst), 0), 0);
	assert_int_equal(mrcd_get1(p.a).status, 0);
	mrc_close(p.ctx);
	close(ready[0]);
	close(ready[1]);
}

/* The daemon dies while a client waits for a completion: the wait ends
 * with an error at once, and later calls fail instead of hanging. */
static void test_daemon_dies(void **state)
{
	NEED_DAEMON(state);
	struct daemon own;
	assert_int_equal(daemon_start(&own, NULL), 0);
	struct pair p;
	pair_open(&own, &p, 65536);
	kill(own.pid, SIGKILL);
	waitpid(own.pid, NULL, 0);
	own.pid = 0;
	int64_t t0 = now_ms();
	assert_int_equal(mrc_wait(p.a, WAIT_MS), -ECONNRESET);
	assert_true(now_ms() - t0 < WAIT_MS / 2);
	struct mrc_qp *qp;
	int r = mrc_create_qp(p.ctx, NULL, &qp);
	assert_true(r == -EPIPE || r == -ECONNRESET);
	mrc_close(p.ctx);
	daemon_stop(&own);
}

int main(void)
{
	seed = getenv("MRC_SEED") ? strtoull(getenv("MRC_SEED"), NULL, 0) : (uint64_t)time(NULL);
	printf("test_libmrc_loop: seed %llu (MRC_SEED to repeat)\n", (unsigned long long)seed);
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_ops_oob),
		cmocka_unit_test(test_bad_descriptors),
		cmocka_unit_test(test_arm_fd),
		cmocka_unit_test(test_wait_spin),
		cmocka_unit_test(test_listen_accept),
		cmocka_unit_test(test_bad_control),
		cmocka_unit_test(test_client_killed),
		cmocka_unit_test(test_daemon_dies),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
