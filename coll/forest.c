/* The plane-aware multi-tree all-reduce (docs/coll.md, "Plane-aware
 * multi-tree"), after the idea of ForestColl: many spanning trees whose
 * union loads every rank, plane and leaf uplink the same, the data split
 * over them, each tree's traffic on the QPs pinned to its plane.
 *
 * Ranks are grouped by leaf switch.  When every group has the same size
 * L (G = n / L groups), tree (g, l) of a plane is two-level: inside each
 * group a binary heap over the members rotated by l, whose root (member
 * l) is the group's leader; the leaders form a binary heap over the
 * groups rotated by g.  So a tree crosses the spines G - 1 times, the
 * fewest a spanning tree over G leaves can, and the n = G x L trees of a
 * plane put every rank in every local heap position exactly G times and
 * in every leader heap position exactly once: the sum of a rank's tree
 * degrees, which is what it sends (up once, down once per child), is the
 * same for every rank.  Unequal groups fall back to one group of n over
 * the leaf-sorted order (still exactly balanced, less leaf-local).
 *
 * Every plane carries the same n trees, so with the data split evenly
 * over planes x n trees, each rank sends 2(n-1)/n of the data in all
 * (the ring's optimum, up to the rounding of the split) and the same
 * share on every plane, in log2 depth instead of the ring's 2(n-1). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "coll/coll_int.h"

/* AUTO's thresholds (docs/coll.md "Choosing by size"): the tree up to
 * MRC__TREE_MAX; with planes > 1 and ranks on more than one leaf, the
 * forest in (MRC__FOREST_MIN, MRC__FOREST_MAX]; the ring elsewhere.
 * The band is empty until a measurement says the forest wins. */
#define MRC__TREE_MAX (64u << 10)
#define MRC__FOREST_MIN MRC__TREE_MAX
#define MRC__FOREST_MAX MRC__TREE_MAX

struct forest {
	uint32_t n, groups, gsize;     /* n = groups x gsize */
	uint32_t *order;               /* ranks sorted by (leaf, rank) */
	uint32_t me_group, me_member;  /* my place in order */
};

/* Rank a sorts before rank b: by leaf, then by rank. */
static int before(const uint32_t *leaf, uint32_t a, uint32_t b)
{
	if (leaf && leaf[a] != leaf[b])
		return leaf[a] < leaf[b];
	return a < b;
}

/* Groups of equal leaf; -ENOMEM. */
static int forest_init(struct forest *f, const struct mrc__forest_shape *sh, uint32_t me)
{
	f->n = sh->n;
	f->order = malloc(sh->n * sizeof(*f->order));
	if (!f->order)
		return -ENOMEM;
	for (uint32_t r = 0; r < sh->n; r++)
		f->order[r] = r;
	/* Insertion sort: qsort takes no context for the leaf table, and n
	 * is the rank count, small next to the data. */
	for (uint32_t i = 1; i < sh->n; i++) {
		uint32_t v = f->order[i], j = i;
		for (; j > 0 && before(sh->leaf, v, f->order[j - 1]); j--)
			f->order[j] = f->order[j - 1];
		f->order[j] = v;
	}
	/* The first leaf's size L; every leaf must hold L ranks, else one
	 * group of n. */
	uint32_t L = 1;
	const uint32_t *lf = sh->leaf;
	while (lf && L < sh->n && lf[f->order[L]] == lf[f->order[0]])
		L++;
	int equal = lf && sh->n % L == 0;
	for (uint32_t i = 1; equal && i < sh->n; i++)
		equal = (i % L == 0) == (lf[f->order[i]] != lf[f->order[i - 1]]);
	f->gsize = equal ? L : sh->n;
	f->groups = sh->n / f->gsize;
	for (uint32_t i = 0; i < sh->n; i++)
		if (f->order[i] == me) {
			f->me_group = i / f->gsize;
			f->me_member = i % f->gsize;
		}
	return 0;
}

static uint32_t member(const struct forest *f, uint32_t group, uint32_t m)
{
	return f->order[group * f->gsize + m];
}

/* My parent (UINT32_MAX: root) and children in tree (g, l). */
static uint32_t tree_links(const struct forest *f, uint32_t g, uint32_t l, uint32_t *child,
			   uint32_t *nchild)
{
	uint32_t L = f->gsize, G = f->groups, i = f->me_group;
	uint32_t q = (f->me_member + L - l) % L, gp = (i + G - g) % G, nc = 0;
	for (uint32_t k = 1; k <= 2 && 2 * q + k < L; k++)
		child[nc++] = member(f, i, (2 * q + k + l) % L);
	if (q == 0)
		for (uint32_t k = 1; k <= 2 && 2 * gp + k < G; k++)
			child[nc++] = member(f, (2 * gp + k + g) % G, l);
	*nchild = nc;
	if (q > 0)
		return member(f, i, ((q - 1) / 2 + l) % L);
	return gp > 0 ? member(f, ((gp - 1) / 2 + g) % G, l) : UINT32_MAX;
}

int mrc__coll_sched_allreduce_forest(struct mrc__coll_sched *s, const struct mrc__forest_shape *sh,
				uint32_t me, size_t count, size_t esz, size_t chunk)
{
	uint32_t n = sh->n, planes = sh->planes ? sh->planes : 1;
	if (n == 1)
		return mrc__coll_sched_allreduce_ring(s, 1, 0, count, esz, chunk);
	*s = (struct mrc__coll_sched){ 0 };
	struct forest f = { 0 };
	if (forest_init(&f, sh, me))
		return -ENOMEM;
	uint64_t trees = (uint64_t)planes * n;
	struct mrc__tree_q q;
	if (mrc__coll_tree_q_init(&q, s, trees * MRC__TREE_AHEAD)) {
		free(f.order);
		return s->err;
	}
	size_t first, len0;
	mrc__coll_seg(count, (uint32_t)trees, 0, &first, &len0);   /* part 0 is the largest */
	/* Chunk-major over the trees, so every tree (and plane) has chunks in
	 * flight at once and each tree's chunks pipeline up and down it. */
	for (uint64_t o = 0; o < (uint64_t)len0 * esz && !s->err; o += chunk)
		for (uint64_t t = 0; t < trees; t++) {
			size_t pf, pl;
			mrc__coll_seg(count, (uint32_t)trees, (uint32_t)t, &pf, &pl);
			uint64_t bytes = (uint64_t)pl * esz;
			if (o >= bytes)
				break;   /* later parts are no longer */
			uint32_t plane = (uint32_t)(t / n), k = (uint32_t)(t % n);
			uint32_t base = sh->pinned ? (1 + plane) * n : 0, child[4], nc;
			uint32_t parent = tree_links(&f, k / f.gsize, k % f.gsize, child, &nc);
			for (uint32_t c = 0; c < nc; c++)
				child[c] += base;
			mrc__coll_sched_tree_chunk(&q, (uint64_t)pf * esz + o, bytes - o < chunk ? bytes - o : chunk,
					      parent == UINT32_MAX ? parent : parent + base, child, nc);
		}
	free(f.order);
	return mrc__coll_tree_q_flush(&q);
}

/* ---- choosing by size (docs/coll.md "Choosing by size") ---------------- */

void mrc__coll_algo_init(struct mrc_coll *c, const struct mrc_coll_cfg *cfg)
{
	c->planes = cfg->planes ? cfg->planes : 1;
	c->hosts_per_leaf = cfg->hosts_per_leaf ? cfg->hosts_per_leaf : 1;
	c->algo = cfg->algo;
	/* Pinned QP sets whenever there are planes to pin to (the forest's
	 * trees, the all-to-alls' spreading): they cost a QP and a receive
	 * window per peer and plane. */
	c->sets = c->planes > 1 ? 1 + c->planes : 1;
	c->np = c->n * c->sets;
}

/* Leaves the ranks sit on (c->leaf: from the bootstrap's hellos). */
static uint32_t leaves(const struct mrc_coll *c)
{
	uint32_t k = 0;
	for (uint32_t r = 0; r < c->n && c->leaf; r++) {
		uint32_t q = 0;
		while (q < r && c->leaf[q] != c->leaf[r])
			q++;
		k += q == r;
	}
	return k;
}

int mrc__coll_allreduce_algo(const struct mrc_coll *c, uint64_t bytes)
{
	if (c->algo != MRC_COLL_ALGO_AUTO)
		return c->algo;
	if (bytes <= MRC__TREE_MAX)
		return MRC_COLL_ALGO_TREE;
	/* The band was measured on a 2-plane fabric with ranks on two or
	 * more leaves; one plane leaves the forest nothing to balance. */
	if (bytes > MRC__FOREST_MIN && bytes <= MRC__FOREST_MAX && c->planes > 1 && c->sets > 1 &&
	    leaves(c) > 1)
		return MRC_COLL_ALGO_FOREST;
	return MRC_COLL_ALGO_RING;
}

int mrc__coll_allreduce_sched(const struct mrc_coll *c, struct mrc__coll_sched *s, size_t count,
			      size_t esz)
{
	switch (mrc__coll_allreduce_algo(c, (uint64_t)count * esz)) {
	case MRC_COLL_ALGO_TREE:
		return mrc__coll_sched_allreduce_tree(s, c->n, c->me, count, esz, c->chunk);
	case MRC_COLL_ALGO_FOREST: {
		struct mrc__forest_shape f = { .n = c->n, .planes = c->planes, .pinned = c->sets > 1,
					       .leaf = c->leaf };
		return mrc__coll_sched_allreduce_forest(s, &f, c->me, count, esz, c->chunk);
	}
	default:
		return mrc__coll_sched_allreduce_ring(s, c->n, c->me, count, esz, c->chunk);
	}
}
