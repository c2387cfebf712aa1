/* The libfabric provider across processes and failures
 * (docs/libfabric.md), against a loopback mrcd: two endpoints in two
 * processes (fork); a sender that closes at once still delivers; a hostile
 * peer (a raw libmrc QP) sending malformed messages: each refused and
 * counted, the receive buffer untouched, the endpoint still working; mrcd
 * killed: a posted receive completes in error, no hang. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <mrc/mrc.h>

#include "tests/support/fi_pair.h"
#include "fi/proto.h"

/* ---- two processes ------------------------------------------------------- */
/* A child's domain and endpoint; its name goes to the parent on wfd. */
static int child_open(struct fix *f, struct fix_ep *e, int wfd)
{
	fix_open(f, CAPS_ALL, FI_AV_TABLE);
	fix_ep_open(f, e, FI_CQ_FORMAT_TAGGED);
	return write(wfd, e->name, e->namelen) == (ssize_t)e->namelen ? 0 : -EIO;
}

/* The parent's domain and endpoint, and the child's address (its name
 * read from rfd). */
static fi_addr_t parent_open(struct fix *f, struct fix_ep *e, int rfd)
{
	fix_open(f, CAPS_ALL, FI_AV_TABLE);
	fix_ep_open(f, e, FI_CQ_FORMAT_TAGGED);
	char peer[8];
	assert_int_equal(read(rfd, peer, 8), 8);
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	assert_int_equal(fi_av_insert(f->av, peer, 1, &a, 0, NULL), 1);
	return a;
}

static int child_main(int wfd, int rfd)
{
	struct fix f;
	struct fix_ep e;
	if (child_open(&f, &e, wfd))
		return 2;
	char peer[64];
	if (read(rfd, peer, 8) != 8)
		return 3;
	fi_addr_t pa;
	if (fi_av_insert(f.av, peer, 1, &pa, 0, NULL) != 1)
		return 4;
	size_t len = 2 * MRCFI_CHUNK + 5;
	uint8_t *b = malloc(len);
	for (int i = 0; i < 4; i++) {
		size_t n = i % 2 ? len : 1000;
		if (fi_trecv(e.ep, b, n, NULL, pa, (uint64_t)i, 0, NULL))
			return 5;
		struct fi_cq_tagged_entry c;
		if (fi_cq_sread(e.cq, &c, 1, NULL, FIX_WAIT_MS) != 1 || c.len != n)
			return 6;
		/* echo it back */
		ssize_t r;
		while ((r = fi_tsend(e.ep, b, n, NULL, pa, (uint64_t)i + 100, NULL)) == -FI_EAGAIN)
			;
		if (r || fi_cq_sread(e.cq, &c, 1, NULL, FIX_WAIT_MS) != 1)
			return 7;
	}
	free(b);
	fix_ep_close(&e);
	fix_close(&f);
	return 0;
}

static void test_two_processes(void **state)
{
	FIX_NEED();
	int up[2], down[2];
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_main(up[1], down[0]));
	struct fix f;
	struct fix_ep e;
	fi_addr_t pa = parent_open(&f, &e, up[0]);
	assert_int_equal(write(down[1], e.name, 8), 8);
	size_t len = 2 * MRCFI_CHUNK + 5;
	uint8_t *s = malloc(len), *r = malloc(len);
	for (int i = 0; i < 4; i++) {
		size_t n = i % 2 ? len : 1000;
		fill(s, n, (uint64_t)i);
		memset(r, 0, n);
		POST(fi_trecv(e.ep, r, n, NULL, pa, (uint64_t)i + 100, 0, NULL));
		POST(fi_tsend(e.ep, s, n, NULL, pa, (uint64_t)i, NULL));
		struct fi_cq_tagged_entry c;
		fi_addr_t src;
		int got_recv = 0;
		for (int k = 0; k < 2; k++) {
			FI_OK(fix_wait_cq(e.cq, &c, &src, NULL));
			if (c.flags & FI_RECV) {
				got_recv = 1;
				assert_int_equal(src, pa);
				assert_int_equal(c.len, n);
			}
		}
		assert_true(got_recv);
		check_bytes(r, n, (uint64_t)i);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed: status %d", st);
	free(s);
	free(r);
	fix_ep_close(&e);
	fix_close(&f);
}

/* ---- receive slots that grow (FI_MRC_RX_POSTED_MAX) ----------------------- */
enum { GROW_SLOTS = 8, GROW_LEN = 512, GROW_BURSTS = 3 };   /* MRCFI_RX_POSTED */

/* The receiver: for each burst the parent announces (its size, a byte),
 * takes that many messages, every byte checked, and answers with its
 * MRCFI_OPT_RX_GROWN. */
static int grow_child(int wfd, int rfd)
{
	struct fix f;
	struct fix_ep e;
	if (child_open(&f, &e, wfd))
		return 2;
	uint8_t n, r[GROW_LEN];
	for (uint64_t salt = 0; read(rfd, &n, 1) == 1; salt += 100) {
		for (int i = 0; i < n; i++) {
			if (fi_trecv(e.ep, r, GROW_LEN, NULL, FI_ADDR_UNSPEC, 9, 0, NULL))
				return 3;
			struct fi_cq_tagged_entry c;
			if (fi_cq_sread(e.cq, &c, 1, NULL, FIX_WAIT_MS) != 1 || c.len != GROW_LEN)
				return 4;
			for (size_t k = 0; k < GROW_LEN; k++)
				if (r[k] != (uint8_t)(salt + (uint64_t)i + k))
					return 5;
		}
		uint64_t v = 0;
		size_t len = sizeof(v);
		if (fi_getopt(&e.ep->fid, FI_OPT_ENDPOINT, MRCFI_OPT_RX_GROWN, &v, &len) ||
		    write(wfd, &v, sizeof(v)) != (ssize_t)sizeof(v))
			return 6;
	}
	fix_ep_close(&e);
	fix_close(&f);
	return 0;
}

/* One burst of n sends to the child, while it is stopped if stop
 * (SIGSTOP: no thread of it drains anything), each complete only once mrcd has it
 * ACKed (FI_TRANSMIT_COMPLETE: in one of the child's receive slots);
 * then the child runs and takes them.  Returns its MRCFI_OPT_RX_GROWN. */
static uint64_t grow_burst(pid_t pid, int up, int down, struct fix_ep *e, fi_addr_t to,
			   uint8_t n, uint64_t salt, int stop)
{
	static uint8_t s[2 * GROW_SLOTS][GROW_LEN];
	int st;
	if (stop) {
		assert_int_equal(kill(pid, SIGSTOP), 0);
		assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
		assert_true(WIFSTOPPED(st));
	}
	for (int i = 0; i < n; i++) {
		for (size_t k = 0; k < GROW_LEN; k++)
			s[i][k] = (uint8_t)(salt + (uint64_t)i + k);
		struct iovec v = { s[i], GROW_LEN };
		struct fi_msg_tagged m = { .msg_iov = &v, .iov_count = 1, .addr = to, .tag = 9 };
		POST(fi_tsendmsg(e->ep, &m, FI_TRANSMIT_COMPLETE | FI_COMPLETION));
	}
	struct fi_cq_tagged_entry c;
	for (int i = 0; i < n; i++)
		FI_OK(fix_wait_cq(e->cq, &c, NULL, NULL));
	assert_int_equal(write(down, &n, 1), 1);
	if (stop)
		assert_int_equal(kill(pid, SIGCONT), 0);
	uint64_t grown = 0;
	assert_int_equal(read(up, &grown, sizeof(grown)), (ssize_t)sizeof(grown));
	return grown;
}

static void grow_run(const char *max, uint64_t *first, uint64_t *after)
{
	int up[2], down[2];
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	if (max)
		setenv("FI_MRC_RX_POSTED_MAX", max, 1);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* our end only: the parent's close of down[1] ends the loop */
		close(up[0]);
		close(down[1]);
		_exit(grow_child(up[1], down[0]));
	}
	unsetenv("FI_MRC_RX_POSTED_MAX");
	close(up[1]);
	close(down[0]);
	struct fix f;
	struct fix_ep e;
	fi_addr_t to = parent_open(&f, &e, up[0]);
	/* connected (the child's accept thread must run for that) */
	(void)grow_burst(pid, up[0], down[1], &e, to, 1, 0, 0);
	*first = grow_burst(pid, up[0], down[1], &e, to, GROW_SLOTS, 100, 1);
	/* grown: a burst of twice the old slots fits without RNR (not
	 * ungrown: the child being stopped, it would wait in RNR for good) */
	*after = grow_burst(pid, up[0], down[1], &e, to, max ? GROW_SLOTS : 2 * GROW_SLOTS,
			    200, 1);
	close(down[1]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "receiver failed: status %d", st);
	close(up[0]);
	fix_ep_close(&e);
	fix_close(&f);
}

/* A burst that fills every receive slot of a QP before its receiver
 * looks (the rest of a larger one would wait in RNR at the sender, 100 us
 * a retry) makes the QP grow (docs/libfabric.md "Eager messages"):
 * MRCFI_OPT_RX_GROWN moves by the QP's 8 slots, and by 16 more when a
 * burst of 16 fills the 16 (which all land while the receiver is
 * stopped: they fit); with FI_MRC_RX_POSTED_MAX=8 it stays 0 over two
 * bursts of 8.  The receiver
 * is stopped (SIGSTOP) while the burst lands, so its drain sees all of
 * it at once, whatever the load. */
static void test_rx_grow(void **state)
{
	FIX_NEED();
	uint64_t first, after, first_off, after_off;
	grow_run(NULL, &first, &after);
	grow_run("8", &first_off, &after_off);
	print_message("grown: %llu after a burst of %d, %llu after %d more (%llu, %llu with "
		      "FI_MRC_RX_POSTED_MAX=8)\n", (unsigned long long)first, GROW_SLOTS,
		      (unsigned long long)after, 2 * GROW_SLOTS, (unsigned long long)first_off,
		      (unsigned long long)after_off);
	assert_int_equal(first, GROW_SLOTS);
	assert_int_equal(after, 3 * GROW_SLOTS);
	assert_int_equal(first_off, 0);
	assert_int_equal(after_off, 0);
}

/* A process that sends its first message to a peer and closes at once
 * (fabtests' fi_rdm and fi_cq_data clients): the send completes early
 * (inject-complete), so fi_close(ep) must let it go out before the QPs
 * go (FI_MRC_LINGER_MS).  With FI_MRC_LINGER_MS=0 the message was lost. */
static int sender_main(int wfd, int rfd)
{
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	struct fix_ep e;
	fix_ep_open(&f, &e, FI_CQ_FORMAT_TAGGED);
	char peer[8];
	if (read(rfd, peer, 8) != 8)
		return 3;
	fi_addr_t pa;
	if (fi_av_insert(f.av, peer, 1, &pa, 0, NULL) != 1)
		return 4;
	uint8_t b[1000];
	fill(b, sizeof(b), 77);
	ssize_t r;
	while ((r = fi_tsenddata(e.ep, b, sizeof(b), NULL, 0xda7a, pa, 77, NULL)) == -FI_EAGAIN)
		;
	struct fi_cq_tagged_entry c;
	if (r || fi_cq_sread(e.cq, &c, 1, NULL, FIX_WAIT_MS) != 1)
		return 5;
	fix_ep_close(&e);
	fix_close(&f);
	return 0;
}

static void test_send_then_close(void **state)
{
	FIX_NEED();
	int up[2], down[2];
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid_t pid = fork();   /* before the domain: its thread and locks */
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(sender_main(up[1], down[0]));
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	struct fix_ep e;
	fix_ep_open(&f, &e, FI_CQ_FORMAT_TAGGED);
	assert_int_equal(write(down[1], e.name, 8), 8);
	/* the child is gone before we post: the message waits unexpected */
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sender failed: status %d", st);
	uint8_t r[1000];
	POST(fi_trecv(e.ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, 77, 0, NULL));
	struct fi_cq_tagged_entry c;
	FI_OK(fix_wait_cq(e.cq, &c, NULL, NULL));
	assert_true(c.flags & FI_RECV);
	assert_int_equal(c.len, sizeof(r));
	assert_int_equal(c.data, 0xda7a);
	check_bytes(r, sizeof(r), 77);
	fix_ep_close(&e);
	fix_close(&f);
}

/* fabtests' fi_mr_test: one malloc'd 8 MiB buffer (mmap'd by malloc)
 * registered with every access combination at growing sizes, 1 byte
 * first: remote write moves pages to a memfd, and the first move must
 * not leave the buffer half moved (the 4 KiB registration failed). */

/* ---- a hostile peer ------------------------------------------------------- */

static void raw_send(struct mrc_qp *qp, struct mrc_mr *mr, const void *msg, size_t n)
{
	memcpy(mrc_mr_addr(mr), msg, n);
	assert_int_equal(mrc_post_send(qp, 1, mrc_mr_key(mr), 0, n), 0);
	raw_peer_sent(qp);
}


static void test_hostile(void **state)
{
	FIX_NEED();
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	struct fix_ep b;
	fix_ep_open(&f, &b, FI_CQ_FORMAT_TAGGED);
	/* the raw peer: a libmrc QP connected to b's service id, calling
	 * itself service 0x1234 */
	struct raw_peer peer;
	raw_peer_open(&peer, &b);
	struct mrc_ctx *ctx = peer.ctx;
	struct mrc_mr *mr = peer.mr;
	struct mrc_qp *qp = peer.qp;
	const uint32_t *bname = peer.bname;
	for (int k = 0; k < 8; k++)
		assert_int_equal(mrc_post_recv(qp, 100 + (uint64_t)k, mrc_mr_key(mr), 32768, 8192), 0);
	struct mrc_qp_addr remote;
	assert_int_equal(mrc_connect(qp, bname[0], bname[1], 0x1234, &remote), 0);
	uint32_t rawname[2] = { bname[0], 0x1234 };
	fi_addr_t raw_addr;
	assert_int_equal(fi_av_insert(f.av, rawname, 1, &raw_addr, 0, NULL), 1);

	uint8_t *rbuf = malloc(256);
	memset(rbuf, 0xee, 256);
	int rc;
	POST(fi_trecv(b.ep, rbuf, 128, NULL, FI_ADDR_UNSPEC, 5, 0, &rc));
	uint8_t msg[MRCFI_SLOT];
	struct mrcfi_hdr *h = (struct mrcfi_hdr *)msg;
	uint64_t errs = 0;
	/* 1. bad magic */
	memset(msg, 0, sizeof(msg));
	*h = (struct mrcfi_hdr){ .magic = 0xdeadbeef, .op = MRCFI_EAGER, .hlen = sizeof(*h),
				 .flags = MRCFI_F_TAGGED, .tag = 5, .len = 16 };
	raw_send(qp, mr, msg, sizeof(*h) + 16);
	fix_wait_proto_errors(&b, ++errs);
	/* 2. an eager length beyond what was written */
	h->magic = MRCFI_MAGIC;
	h->len = 4000;
	raw_send(qp, mr, msg, sizeof(*h) + 16);
	fix_wait_proto_errors(&b, ++errs);
	/* 3. a header shorter than a header */
	raw_send(qp, mr, msg, 20);
	fix_wait_proto_errors(&b, ++errs);
	/* 4. rendezvous data for a receive never granted */
	*h = (struct mrcfi_hdr){ .magic = MRCFI_MAGIC, .op = MRCFI_RZDATA, .hlen = sizeof(*h),
				 .rreq = 1, .len = 64 };
	raw_send(qp, mr, msg, sizeof(*h));
	fix_wait_proto_errors(&b, ++errs);
	/* 5. a CTS for a send that does not exist */
	*h = (struct mrcfi_hdr){ .magic = MRCFI_MAGIC, .op = MRCFI_CTS, .hlen = sizeof(*h),
				 .sreq = 7, .len = 64, .rkey = 1 };
	raw_send(qp, mr, msg, sizeof(*h));
	fix_wait_proto_errors(&b, ++errs);
	/* 6. unknown op, unknown flags */
	*h = (struct mrcfi_hdr){ .magic = MRCFI_MAGIC, .op = 9, .hlen = sizeof(*h) };
	raw_send(qp, mr, msg, sizeof(*h));
	fix_wait_proto_errors(&b, ++errs);
	/* none of it reached the posted receive */
	struct fi_cq_tagged_entry c;
	assert_int_equal(fi_cq_read(b.cq, &c, 1), -FI_EAGAIN);
	for (int i = 0; i < 256; i++)
		CHECK(rbuf[i] == 0xee, "byte %d of the receive written by a refused message", i);
	/* 7. a rendezvous whose data claims more than the chunk granted */
	*h = (struct mrcfi_hdr){ .magic = MRCFI_MAGIC, .op = MRCFI_RTS, .hlen = sizeof(*h),
				 .flags = MRCFI_F_TAGGED, .tag = 5, .sreq = 77, .total = 100 };
	raw_send(qp, mr, msg, sizeof(*h));
	/* b answers with a CTS to the raw QP */
	struct mrc_completion rc2;
	int64_t end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	int n;
	while ((n = mrc_poll_cq(qp, &rc2, 1)) == 0)
		CHECK(mrcd_spawn_now_ms() < end, "no CTS came back");
	assert_int_equal(n, 1);
	assert_int_equal(rc2.op, MRC_CQE_RECV);
	struct mrcfi_hdr cts;
	assert_int_equal(mrcfi_hdr_parse((uint8_t *)mrc_mr_addr(mr) + 32768, rc2.byte_len, &cts), 0);
	assert_int_equal(cts.op, MRCFI_CTS);
	assert_int_equal(cts.sreq, 77);
	assert_int_equal(cts.len, 100);
	*h = (struct mrcfi_hdr){ .magic = MRCFI_MAGIC, .op = MRCFI_RZDATA, .hlen = sizeof(*h),
				 .sreq = 77, .rreq = cts.rreq, .len = 5000 };
	raw_send(qp, mr, msg, sizeof(*h));
	fix_wait_proto_errors(&b, ++errs);
	/* the right data: WRITE into the granted chunk, then RZDATA */
	fill((uint8_t *)mrc_mr_addr(mr) + 1024, 100, 3);
	assert_int_equal(mrc_post_write(qp, 2, mrc_mr_key(mr), 1024, 100, cts.rkey, cts.roff), 0);
	h->len = 100;
	raw_send(qp, mr, msg, sizeof(*h));
	struct fi_cq_err_entry ee;
	end = mrcd_spawn_now_ms() + FIX_WAIT_MS;
	ssize_t r;
	while ((r = fi_cq_read(b.cq, &c, 1)) == -FI_EAGAIN)
		CHECK(mrcd_spawn_now_ms() < end, "the good rendezvous never completed");
	if (r == -FI_EAVAIL) {
		fi_cq_readerr(b.cq, &ee, 0);
		fail_msg("error %d", ee.err);
	}
	assert_int_equal(r, 1);
	assert_int_equal(c.len, 100);
	check_bytes(rbuf, 100, 3);
	for (int i = 100; i < 256; i++)
		CHECK(rbuf[i] == 0xee, "byte %d past the message written", i);
	assert_int_equal(fix_opt_u64(&b, MRCFI_OPT_PROTO_ERRORS), errs);
	free(rbuf);
	mrc_close(ctx);
	fix_ep_close(&b);
	fix_close(&f);
}

/* ---- a dead mrcd ---------------------------------------------------------- */
static void test_dead_daemon(void **state)
{
	FIX_NEED();
	struct mrcd_proc d;
	assert_int_equal(mrcd_spawn_start(&d, NULL), 0);
	setenv("MRC_SOCKET", d.sock, 1);
	struct fix f;
	fix_open(&f, CAPS_ALL, FI_AV_TABLE);
	setenv("MRC_SOCKET", mrcd_group.d.sock, 1);
	struct fix_ep e;
	fix_ep_open(&f, &e, FI_CQ_FORMAT_TAGGED);
	char buf[16];
	int rc;
	POST(fi_trecv(e.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 1, 0, &rc));
	mrcd_spawn_stop(&d);
	struct fi_cq_tagged_entry c;
	struct fi_cq_err_entry err;
	assert_int_equal(fix_wait_cq(e.cq, &c, NULL, &err), -FI_EAVAIL);
	assert_int_equal(err.err, FI_EIO);
	assert_ptr_equal(err.op_context, &rc);
	/* a send now completes in error too, at once */
	fi_addr_t self = fix_insert(&f, &e);
	int sc;
	POST(fi_tsend(e.ep, buf, 4, NULL, self, 1, &sc));
	assert_int_equal(fix_wait_cq(e.cq, &c, NULL, &err), -FI_EAVAIL);
	assert_int_equal(err.err, FI_EIO);
	fix_ep_close(&e);
	fix_close(&f);
}

int main(void)
{
	seed_init("test_fi_proc");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_two_processes, reseed),
		cmocka_unit_test(test_rx_grow),
		cmocka_unit_test(test_send_then_close),
		cmocka_unit_test_setup(test_hostile, reseed),
		cmocka_unit_test_setup(test_dead_daemon, reseed),
	};
	return cmocka_run_group_tests(tests, fix_group_setup, fix_group_teardown);
}
