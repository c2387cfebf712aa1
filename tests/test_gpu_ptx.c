/* The memory ordering of the GPU producer, read from nvcc's PTX for sm_90
 * (gpu/cuda.mk emits it; docs/gpu.md, "The PTX check").  In each function
 * of the PTX, in text order (nvcc lays a function's blocks out in source
 * order, so this is the order of the straight-line path that posts):
 *
 *  - SQ publication: a 32-bit store at offset 0 of a descriptor slot (a
 *    base register that also takes stores at three or more of the other
 *    struct mrc_sqe field offsets) must be a system-scope release store,
 *    or come after a system-scope fence (fence.sc.sys, fence.acq_rel.sys,
 *    membar.sys) with no other store to that slot in between;
 *  - notify page: the summary store (32 bits at offset 64, after a
 *    pending-byte store at offset 128) must be a release.sys store or
 *    come after such a fence that follows the pending store; the pending
 *    store must follow a full fence (fence.sc.sys / membar.sys) after the
 *    seq store (the Dekker pair of mrc/ring.h: seq, fence, load sleeping);
 *  - CQ tail: a 64-bit store at offset 128 of a ring header must be a
 *    release.sys store or come after such a fence with no ring load
 *    (volatile, relaxed or acquire) in between, so the slot is read before
 *    the daemon may reuse it.
 *
 * Each kind must be found at least once, so that a change in code
 * generation that hides a store from these patterns fails instead of
 * passing.  The checker runs on built-in PTX snippets everywhere, on the
 * reference producer (tests/support/ptx_ref.cu) and on the probe of
 * mrc/gpu.h's producer (gpu/ptx_probe.cu) where CUDA built them, and must
 * reject the _broken variants (every fence dropped). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/skip.h"

enum { K_SEQ, K_NOTIFY, K_TAIL, K_N };
static const char *const kind_name[K_N] = { "SQ seq publication", "notify summary", "CQ tail" };

struct res {
	int found[K_N], bad[K_N];
	char why[K_N][256];
};

struct ins {
	char op[48];
	int store, load, fence_rel, fence_sc, rel_sys, ring_load, bits;
	char base[24];             /* address root register (after resolving) */
	long off;
	int has_addr;
	char dst[24];              /* register defined, "" if none */
	char src[24];              /* add/mov/cvta: the register it derives from */
	long imm;                  /* add: the immediate added */
	int derives;               /* dst = src + imm */
};

/* One PTX instruction line -> its parts (0 if not an instruction). */
static int parse(const char *line, struct ins *in)
{
	memset(in, 0, sizeof(*in));
	while (*line == ' ' || *line == '\t')
		line++;
	if (*line == '@')                      /* predicate guard */
		while (*line && *line != ' ' && *line != '\t')
			line++;
	while (*line == ' ' || *line == '\t')
		line++;
	if (!*line || *line == '/' || *line == '.' || *line == '$' || *line == '{' || *line == '}')
		return 0;
	size_t n = strcspn(line, " \t;");
	if (n >= sizeof(in->op))
		return 0;
	memcpy(in->op, line, n);
	char q[64];
	snprintf(q, sizeof(q), ".%s.", in->op);        /* ".st.release.sys.global.u32." */
	int st = !strncmp(in->op, "st.", 3) || !strncmp(in->op, "atom.", 5) || !strncmp(in->op, "red.", 4);
	int ld = !strncmp(in->op, "ld.", 3);
	if ((st || ld) && (strstr(q, ".local.") || strstr(q, ".param.") || strstr(q, ".shared.")))
		return 1;                      /* not memory the host sees */
	in->store = st;
	in->load = ld;
	in->rel_sys = st && strstr(q, ".release.") && strstr(q, ".sys.");
	in->ring_load = ld && (strstr(q, ".volatile.") || strstr(q, ".acquire.") ||
			       (strstr(q, ".relaxed.") && strstr(q, ".sys.")));
	in->fence_sc = !strcmp(in->op, "membar.sys") || !strcmp(in->op, "fence.sc.sys");
	in->fence_rel = in->fence_sc || !strcmp(in->op, "fence.acq_rel.sys");
	for (const char *t = "8\0" "16\0" "32\0" "64\0"; *t; t += strlen(t) + 1) {
		char suf[8];
		snprintf(suf, sizeof(suf), "%s.", t);
		size_t l = strlen(q), sl = strlen(suf);
		if (l > sl && !strcmp(q + l - sl, suf) && strchr("usb", q[l - sl - 1]))
			in->bits = atoi(t);
	}
	const char *ops = line + n;
	while (*ops == ' ' || *ops == '\t')
		ops++;
	if (!st && *ops == '%') {
		size_t dl = strcspn(ops, ", \t;");
		if (dl < sizeof(in->dst)) {
			memcpy(in->dst, ops, dl);
			const char *sp = ops + dl + strspn(ops + dl, ", \t");
			size_t sl = strcspn(sp, ", \t;");
			int is_add = !strcmp(in->op, "add.s64") || !strcmp(in->op, "add.u64");
			int is_mov = !strcmp(in->op, "mov.u64") || !strcmp(in->op, "mov.b64") ||
				     !strncmp(in->op, "cvta.", 5);
			if ((is_add || is_mov) && *sp == '%' && sl < sizeof(in->src)) {
				memcpy(in->src, sp, sl);
				const char *ip = sp + sl + strspn(sp + sl, ", \t");
				char *end;
				in->imm = is_add ? strtol(ip, &end, 0) : 0;
				in->derives = is_mov || (end != ip && (*end == ';' || *end == ' '));
			}
		}
	}
	const char *a = strchr(line, '[');
	if ((st || ld) && a) {
		const char *e = strchr(a, ']');
		size_t bl = strcspn(a + 1, "+]");
		if (e && bl < sizeof(in->base)) {
			memcpy(in->base, a + 1, bl);
			in->off = a[1 + bl] == '+' ? strtol(a + 2 + bl, NULL, 10) : 0;
			in->has_addr = 1;
		}
	}
	return 1;
}

static const long sqe_fields[] = { 4, 5, 8, 16, 20, 24, 32, 40, 48, 56, 60 };

static void bad(struct res *r, int k, const char *fn, const char *fmt, const char *a)
{
	if (!r->bad[k]++) {
		char m[120];
		snprintf(m, sizeof(m), fmt, a);
		snprintf(r->why[k], sizeof(r->why[k]), "%.40s: %s", fn, m);
	}
}

/* Addresses as (root register, offset): a register defined as another
 * plus an immediate (add.s64 %rd94, %rd98, 64), or a copy of one (mov,
 * cvta), stands for its root at the summed offset; any other definition
 * makes a register a root of its own.  In text order, so each use sees
 * the latest definition before it. */
struct def { char reg[24], root[24]; long off; };
static void resolve(struct ins *v, int n)
{
	struct def *d = calloc((size_t)n + 1, sizeof(*d));
	int nd = 0;
	assert_non_null(d);
	for (int i = 0; i < n; i++) {
		if (v[i].has_addr)
			for (int k = nd - 1; k >= 0; k--)
				if (!strcmp(d[k].reg, v[i].base)) {
					v[i].off += d[k].off;
					snprintf(v[i].base, sizeof(v[i].base), "%s", d[k].root);
					break;
				}
		if (!v[i].dst[0])
			continue;
		struct def nw = { .off = 0 };
		snprintf(nw.reg, sizeof(nw.reg), "%s", v[i].dst);
		snprintf(nw.root, sizeof(nw.root), "%s", v[i].dst);
		if (v[i].derives) {
			snprintf(nw.root, sizeof(nw.root), "%s", v[i].src);
			nw.off = v[i].imm;
			for (int k = nd - 1; k >= 0; k--)
				if (!strcmp(d[k].reg, v[i].src)) {
					snprintf(nw.root, sizeof(nw.root), "%s", d[k].root);
					nw.off += d[k].off;
					break;
				}
		}
		d[nd++] = nw;
	}
	free(d);
}

/* Checks one function's instructions. */
static void check_fn(const char *fn, struct ins *v, int n, struct res *r)
{
	resolve(v, n);
	int last_seq = -1, last_pending = -1;
	for (int i = 0; i < n; i++) {
		const struct ins *s = &v[i];
		if (!s->store || !s->has_addr)
			continue;
		/* seq: 32 bits at offset 0 of a slot base. */
		if (s->bits == 32 && s->off == 0) {
			int fields = 0;
			for (size_t f = 0; f < sizeof(sqe_fields) / sizeof(sqe_fields[0]); f++)
				for (int j = 0; j < n; j++)
					if (v[j].store && !strcmp(v[j].base, s->base) && v[j].off == sqe_fields[f]) {
						fields++;
						break;
					}
			if (fields >= 3) {
				r->found[K_SEQ]++;
				last_seq = i;
				if (!s->rel_sys) {
					int j = i - 1;
					for (; j >= 0 && !v[j].fence_rel; j--)
						if (v[j].store && !strcmp(v[j].base, s->base) && v[j].off >= 0 &&
						    v[j].off < 64) {
							bad(r, K_SEQ, fn, "store to the slot (%s) between the fence and the seq store", s->base);
							break;
						}
					if (j < 0)
						bad(r, K_SEQ, fn, "seq store %s is neither release.sys nor after a system fence", s->op);
				}
				continue;
			}
		}
		if (s->bits == 8 && s->off == 128) {
			last_pending = i;
			int fenced = last_seq < 0;     /* seq in another function: not ours to judge */
			for (int j = last_seq + 1; j < i && !fenced; j++)
				fenced = v[j].fence_sc;
			if (!fenced)
				bad(r, K_NOTIFY, fn, "pending store without a full system fence after the seq store%s", "");
		}
		if (s->bits == 32 && s->off == 64 && last_pending >= 0) {
			r->found[K_NOTIFY]++;
			int fenced = s->rel_sys;
			for (int j = last_pending + 1; j < i && !fenced; j++)
				fenced = v[j].fence_rel;
			if (!fenced)
				bad(r, K_NOTIFY, fn, "summary store %s not ordered after the pending store", s->op);
			last_pending = -1;
		}
		if (s->bits == 64 && s->off == 128) {
			r->found[K_TAIL]++;
			if (!s->rel_sys) {
				int j = i - 1;
				for (; j >= 0 && !v[j].fence_rel; j--)
					if (v[j].ring_load) {
						bad(r, K_TAIL, fn, "ring load between the fence and the tail store%s", "");
						break;
					}
				if (j < 0)
					bad(r, K_TAIL, fn, "tail store %s is neither release.sys nor after a system fence", s->op);
			}
		}
	}
}

/* Checks PTX text: every .entry / .func separately (addresses resolved
 * within the function). */
static void check_ptx(const char *text, struct res *r)
{
	memset(r, 0, sizeof(*r));
	int cap = 4096, n = 0;
	struct ins *v = calloc((size_t)cap, sizeof(*v));
	char fn[64] = "?";
	const char *p = text;
	assert_non_null(v);
	for (;;) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		char line[512];
		if (l >= sizeof(line))
			l = sizeof(line) - 1;
		memcpy(line, p, l);
		line[l] = 0;
		const char *d = strstr(line, ".entry ");
		if (!d)
			d = strstr(line, ".func ");
		if (d || !e) {
			check_fn(fn, v, n, r);
			n = 0;
			if (d)
				snprintf(fn, sizeof(fn), "%s", strchr(d, ' ') + 1);
		}
		struct ins in;
		if (parse(line, &in)) {
			if (n == cap) {
				cap *= 2;
				v = realloc(v, (size_t)cap * sizeof(*v));
				assert_non_null(v);
			}
			v[n++] = in;
		}
		if (!e)
			break;
		p = e + 1;
	}
	free(v);
}

static char bdir[4096];

/* The build directory's gpu/ from /proc/self/exe (B/tests/test_gpu_ptx). */
static char *read_ptx(const char *name)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/gpu/%s", bdir, name);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	rewind(f);
	char *b = malloc((size_t)sz + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)sz, f), (size_t)sz);
	b[sz] = 0;
	fclose(f);
	return b;
}

static void expect_ok(const char *what, const struct res *r)
{
	for (int k = 0; k < K_N; k++) {
		if (!r->found[k])
			fail_msg("%s: no %s found (the patterns no longer match nvcc's code?)", what, kind_name[k]);
		if (r->bad[k])
			fail_msg("%s: %s: %s", what, kind_name[k], r->why[k]);
	}
}

/* ---- the checker on snippets (runs everywhere) ---------------------- */
#define SLOT "st.volatile.global.u64 [%rd9+8], %rd1;\n st.volatile.global.u32 [%rd9+16], %r1;\n" \
	     "st.volatile.global.u64 [%rd9+24], %rd2;\n"
static void test_snippets(void **state)
{
	struct res r;
	check_ptx(".entry a(\n" SLOT "membar.sys;\n st.volatile.global.u32 [%rd9], %r2;\n", &r);
	assert_int_equal(r.found[K_SEQ], 1);
	assert_int_equal(r.bad[K_SEQ], 0);
	check_ptx(".entry a(\n" SLOT "st.release.sys.global.u32 [%rd9], %r2;\n", &r);
	assert_int_equal(r.bad[K_SEQ], 0);
	check_ptx(".entry a(\n" SLOT "st.relaxed.sys.global.u32 [%rd9], %r2;\n", &r);
	assert_int_equal(r.bad[K_SEQ], 1);
	check_ptx(".entry a(\nmembar.sys;\n" SLOT "st.volatile.global.u32 [%rd9+0], %r2;\n", &r);
	assert_int_equal(r.bad[K_SEQ], 1);                    /* slot stores after the fence */
	check_ptx(".entry a(\n" SLOT "membar.gl;\n st.volatile.global.u32 [%rd9], %r2;\n", &r);
	assert_int_equal(r.bad[K_SEQ], 1);                    /* device scope is not enough */
	check_ptx(".entry a(\n" SLOT "fence.sc.sys;\n st.volatile.global.u32 [%rd9], %r2;\n"
		  "fence.sc.sys;\n ld.volatile.global.u32 %r3, [%rd4+136];\n"
		  "st.volatile.global.u8 [%rd5+128], %rs1;\n fence.sc.sys;\n"
		  "st.volatile.global.u32 [%rd6+64], %r4;\n", &r);
	assert_int_equal(r.found[K_NOTIFY], 1);
	assert_int_equal(r.bad[K_NOTIFY], 0);
	check_ptx(".entry a(\n" SLOT "fence.sc.sys;\n st.volatile.global.u32 [%rd9], %r2;\n"
		  "fence.acq_rel.sys;\n st.volatile.global.u8 [%rd5+128], %rs1;\n"
		  "st.volatile.global.u32 [%rd6+64], %r4;\n", &r);
	assert_int_equal(r.bad[K_NOTIFY], 2);                 /* acq_rel is no Dekker fence; no fence before summary */
	check_ptx(".entry b(\nld.volatile.global.u32 %r1, [%rd2];\n fence.acq_rel.sys;\n"
		  "ld.volatile.global.u32 %r2, [%rd2+4];\n st.volatile.global.u64 [%rd3+128], %rd4;\n", &r);
	assert_int_equal(r.found[K_TAIL], 1);
	assert_int_equal(r.bad[K_TAIL], 1);                   /* slot read after the fence */
	check_ptx(".entry b(\nld.volatile.global.u32 %r2, [%rd2+4];\n"
		  "st.release.sys.global.u64 [%rd3+128], %rd4;\n", &r);
	assert_int_equal(r.bad[K_TAIL], 0);
	/* Addresses computed into registers, as inline asm takes them. */
	check_ptx(".entry d(\n" SLOT "add.s64 %rd10, %rd9, 0;\n st.release.sys.u32 [%rd10], %r2;\n"
		  "fence.sc.sys;\n add.s64 %rd20, %rd21, %rd22;\n add.s64 %rd23, %rd20, 128;\n"
		  "st.relaxed.sys.u8 [%rd23], %rs1;\n fence.sc.sys;\n add.s64 %rd24, %rd30, 32;\n"
		  "add.s64 %rd25, %rd24, 32;\n st.relaxed.sys.u32 [%rd25], %r4;\n"
		  "add.s64 %rd26, %rd31, 128;\n st.relaxed.sys.u64 [%rd26], %rd4;\n", &r);
	assert_int_equal(r.found[K_SEQ], 1);
	assert_int_equal(r.found[K_NOTIFY], 1);
	assert_int_equal(r.found[K_TAIL], 1);
	assert_int_equal(r.bad[K_SEQ] + r.bad[K_NOTIFY], 0);
	assert_int_equal(r.bad[K_TAIL], 0);                   /* the fence before the summary orders it too */
	check_ptx(".entry b(\nmembar.sys;\n.entry c(\n st.volatile.global.u64 [%rd3+128], %rd4;\n", &r);
	assert_int_equal(r.bad[K_TAIL], 1);                   /* a fence in another function counts for nothing */
}

static void check_file(const char *ok, const char *broken, const char *skip_why)
{
	char *a = read_ptx(ok), *b = read_ptx(broken);
	if (!a || !b) {
		free(a);
		free(b);
		MRC_SKIP("%s", skip_why);
	}
	struct res r;
	check_ptx(a, &r);
	expect_ok(ok, &r);
	check_ptx(b, &r);
	/* The broken variant must be rejected, for the SQ publication at
	 * least (its fence is the one every producer has). */
	if (!r.bad[K_SEQ])
		fail_msg("%s: the checker accepted the seq publication without its fence", broken);
	free(a);
	free(b);
}

/* Both broken variants drop every fence and release: all three kinds
 * must be rejected. */
static void expect_all_rejected(const char *broken)
{
	char *b = read_ptx(broken);
	struct res r;
	assert_non_null(b);
	check_ptx(b, &r);
	for (int k = 0; k < K_N; k++)
		if (!r.bad[k])
			fail_msg("%s: %s without fences accepted", broken, kind_name[k]);
	free(b);
}

static void test_reference(void **state)
{
	check_file("ptx_ref.ptx", "ptx_ref_broken.ptx", "no PTX: built without CUDA (gpu/cuda.mk)");
	expect_all_rejected("ptx_ref_broken.ptx");
}

static void test_probe(void **state)
{
	char *ref = read_ptx("ptx_ref.ptx");
	free(ref);
	check_file("ptx_probe.ptx", "ptx_probe_broken.ptx",
		   ref ? "no probe PTX: mrc/gpu.h has no producer (mrc_gpu_post) yet"
		       : "no PTX: built without CUDA (gpu/cuda.mk)");
	expect_all_rejected("ptx_probe_broken.ptx");
}

int main(void)
{
	ssize_t n = readlink("/proc/self/exe", bdir, sizeof(bdir) - 1);
	if (n > 0) {
		bdir[n] = 0;
		for (int i = 0; i < 2; i++) {          /* B/tests/test_gpu_ptx -> B */
			char *s = strrchr(bdir, '/');
			if (s)
				*s = 0;
		}
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snippets),
		cmocka_unit_test(test_reference),
		cmocka_unit_test(test_probe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
