/* Topology validation: each malformed file is rejected with -EINVAL, a
 * message naming the field, the value and the rule, and no topology.
 * Cases are a valid base file with one thing changed, so each case shows
 * the one rule it breaks. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "topology/topo.h"

#define HOSTS "{\"name\":\"h0\",\"usid\":\"0x8000\"},{\"name\":\"h1\",\"usid\":\"0x8001\"}"
#define SW "{\"name\":\"p0l0\",\"tier\":\"leaf\",\"plane\":0,\"usid\":\"0x1000\"}," \
	   "{\"name\":\"p0s0\",\"tier\":\"spine\",\"plane\":0,\"usid\":\"0x2000\"}," \
	   "{\"name\":\"p1l0\",\"tier\":\"leaf\",\"plane\":1,\"usid\":\"0x1100\"}," \
	   "{\"name\":\"p1s0\",\"tier\":\"spine\",\"plane\":1,\"usid\":\"0x2100\"}"
#define LINKS "{\"a\":\"h0\",\"b\":\"p0l0\"},{\"a\":\"h1\",\"b\":\"p0l0\"}," \
	      "{\"a\":\"h0\",\"b\":\"p1l0\"},{\"a\":\"h1\",\"b\":\"p1l0\"}," \
	      "{\"a\":\"p0l0\",\"b\":\"p0s0\"},{\"a\":\"p1l0\",\"b\":\"p1s0\"}"
#define FILE_(top, hosts, sw, links) \
	"{\"version\":1,\"planes\":2" top ",\"hosts\":[" hosts "],\"switches\":[" sw \
	"],\"links\":[" links "]}"
#define GEN(g) "{\"version\":1,\"generate\":{" g "}}"
#define GOOD_GEN "\"planes\":2,\"leaves_per_plane\":2,\"spines_per_plane\":2,\"hosts_per_leaf\":1"

static void expect_ok(const char *text)
{
	struct mrc_topo *t = NULL;
	char err[MRC_TOPO_ERRLEN] = "";
	if (mrc_topo_parse_json(text, strlen(text), &t, err, sizeof(err)))
		fail_msg("valid base file rejected: %s", err);
	mrc_topo_free(t);
}

static void expect_err(const char *text, const char *want)
{
	struct mrc_topo *t = (struct mrc_topo *)(uintptr_t)0x1;  /* must stay untouched */
	char err[MRC_TOPO_ERRLEN] = "";
	int rc = mrc_topo_parse_json(text, strlen(text), &t, err, sizeof(err));
	if (rc != -EINVAL)
		fail_msg("rc %d for %s (err '%s')", rc, text, err);
	if (t != (struct mrc_topo *)(uintptr_t)0x1)
		fail_msg("a topology came back for %s", text);
	if (!strstr(err, want))
		fail_msg("error '%s' lacks '%s' for %s", err, want, text);
}

static void test_bases_are_valid(void **state)
{
	(void)state;
	expect_ok(FILE_("", HOSTS, SW, LINKS));
	expect_ok(GEN(GOOD_GEN));
}

static void test_syntax_and_top_level(void **state)
{
	(void)state;
	expect_err("{\"version\":1,", "line 1 column");
	expect_err("", "line");
	expect_err("[1]", "top level: must be an object");
	expect_err("{\"generate\":{}}", "top level: missing field 'version'");
	expect_err("{\"version\":2," GOOD_GEN "}", "version: 2 is not supported");
	expect_err("{\"version\":\"1\"}", "top level.version: must be an integer");
	expect_err("{\"version\":1,\"version\":1}", "duplicate");
	expect_err("{\"version\":1,\"blok\":\"x\",\"generate\":{" GOOD_GEN "}}",
		   "unknown field 'blok'");
	expect_err(FILE_(",\"colour\":3", HOSTS, SW, LINKS), "top level: unknown field 'colour'");
	expect_err("{\"version\":1,\"planes\":1}", "hosts: missing");
	expect_err("{\"version\":1,\"planes\":1,\"hosts\":{},\"switches\":[],\"links\":[]}",
		   "hosts: must be an array");
	expect_err("{\"version\":1,\"hosts\":[],\"switches\":[],\"links\":[]}",
		   "missing field 'planes'");
	expect_err(FILE_(",\"mtu\":1000", HOSTS, SW, LINKS), "mtu: 1000 is not in 1280..65535");
	expect_err(FILE_(",\"rate_mbit\":-1", HOSTS, SW, LINKS), "rate_mbit: -1 is not in");
}

static void test_block(void **state)
{
	(void)state;
	expect_err("{\"version\":1,\"block\":\"fcbb:bb00::/33\",\"generate\":{" GOOD_GEN "}}",
		   "block: 'fcbb:bb00::/33': length '33' is not 16, 32, 48 or 64");
	expect_err("{\"version\":1,\"block\":\"fcbb:bb00::1/32\",\"generate\":{" GOOD_GEN "}}",
		   "bits set after the /32 block");
	expect_err("{\"version\":1,\"block\":\"fcbb:zz::/32\",\"generate\":{" GOOD_GEN "}}",
		   "'fcbb:zz::' is not an IPv6 address");
	expect_err("{\"version\":1,\"block\":\"fcbb::\",\"generate\":{" GOOD_GEN "}}",
		   "not ADDR/LEN");
	expect_err("{\"version\":1,\"block\":32,\"generate\":{" GOOD_GEN "}}",
		   "block: must be a string");
}

static void test_generate_form(void **state)
{
	(void)state;
	expect_err(GEN("\"planes\":0,\"leaves_per_plane\":2,\"spines_per_plane\":2,\"hosts_per_leaf\":1"),
		   "generate.planes: 0 is not in 1..16");
	expect_err(GEN("\"planes\":17,\"leaves_per_plane\":2,\"spines_per_plane\":2,\"hosts_per_leaf\":1"),
		   "generate.planes: 17 is not in 1..16");
	expect_err(GEN("\"planes\":1,\"leaves_per_plane\":257,\"spines_per_plane\":2,\"hosts_per_leaf\":1"),
		   "generate.leaves_per_plane: 257 is not in 1..256");
	expect_err(GEN("\"planes\":1,\"leaves_per_plane\":2,\"hosts_per_leaf\":1"),
		   "generate: missing field 'spines_per_plane'");
	expect_err(GEN("\"planes\":1,\"leaves_per_plane\":256,\"spines_per_plane\":2,\"hosts_per_leaf\":200"),
		   "51200 hosts: at most 32768");
	expect_err(GEN(GOOD_GEN ",\"tiers\":3"), "generate: unknown field 'tiers'");
	expect_err("{\"version\":1,\"generate\":[]}", "generate: must be an object");
	expect_err("{\"version\":1,\"planes\":2,\"generate\":{" GOOD_GEN "}}",
		   "top level (generate form): unknown field 'planes'");
}

static void test_nodes(void **state)
{
	(void)state;
	expect_err(FILE_("", "{\"name\":\"h 0\",\"usid\":1}", SW, LINKS),
		   "hosts[0].name: 'h 0': has a character other than");
	expect_err(FILE_("", "{\"name\":\"a-very-long-hostname\",\"usid\":1}", SW, LINKS),
		   "hosts[0].name: 'a-very-long-hostname': longer than 15 characters");
	expect_err(FILE_("", "{\"name\":\"\",\"usid\":1}", SW, LINKS), "hosts[0].name: '': empty");
	expect_err(FILE_("", "{\"usid\":1}", SW, LINKS), "hosts[0]: missing field 'name'");
	expect_err(FILE_("", "{\"name\":\"h0\",\"usid\":1,\"plane\":0}", SW, LINKS),
		   "hosts[0]: unknown field 'plane'");
	expect_err(FILE_("", "{\"name\":\"h0\",\"usid\":65536}", SW, LINKS),
		   "hosts[0].usid: 65536 does not fit 16 bits");
	expect_err(FILE_("", "{\"name\":\"h0\",\"usid\":\"0x10000\"}", SW, LINKS),
		   "hosts[0].usid: '0x10000' is not an integer or a hex string");
	expect_err(FILE_("", "{\"name\":\"h0\",\"usid\":0}", SW, LINKS),
		   "hosts[0].usid: 0 does not fit 16 bits (1..0xffff; 0 is End-of-Carrier)");
	expect_err(FILE_("", "{\"name\":\"h0\",\"usid\":\"0xzz\"}", SW, LINKS),
		   "hosts[0].usid: '0xzz' is not an integer or a hex string");
	expect_err(FILE_("", "{\"name\":\"h0\",\"usid\":1.5}", SW, LINKS),
		   "hosts[0].usid: must be an integer or a hex string");
	expect_err(FILE_("", "{\"name\":\"h0\",\"usid\":\"0x8000\"},{\"name\":\"h1\",\"usid\":\"0x1000\"}",
			 SW, LINKS),
		   "p0l0: usid 0x1000 is already used by h1");
	expect_err(FILE_("", "{\"name\":\"h0\",\"usid\":\"0x8000\"},{\"name\":\"p0s0\",\"usid\":1}", SW, LINKS),
		   "node name 'p0s0' is used twice");
	expect_err(FILE_("", HOSTS, "{\"name\":\"p0l0\",\"tier\":\"core\",\"plane\":0,\"usid\":5}", LINKS),
		   "switches[0].tier: 'core' is not \"leaf\" or \"spine\"");
	expect_err(FILE_("", HOSTS, "{\"name\":\"p0l0\",\"tier\":\"leaf\",\"plane\":2,\"usid\":5}", LINKS),
		   "switches[0].plane: 2 is not in 0..1");
	expect_err(FILE_("", HOSTS, "{\"name\":\"p0l0\",\"tier\":\"leaf\",\"usid\":5}", LINKS),
		   "switches[0]: missing field 'plane'");
	expect_err(FILE_("", HOSTS, "[]", LINKS), "switches[0]: must be an object");
}

static void test_links(void **state)
{
	(void)state;
	expect_err(FILE_("", HOSTS, SW, LINKS ",{\"a\":\"h0\",\"b\":\"p9l9\"}"),
		   "links[6].b: no node named 'p9l9'");
	expect_err(FILE_("", HOSTS, SW, LINKS ",{\"a\":\"x\",\"b\":\"p0l0\"}"),
		   "links[6].a: no node named 'x'");
	expect_err(FILE_("", HOSTS, SW, LINKS ",{\"a\":\"h0\"}"), "links[6]: missing field 'b'");
	expect_err(FILE_("", HOSTS, SW, LINKS ",{\"a\":\"h0\",\"b\":\"p0s0\"}"),
		   "links[6] (h0-p0s0): a host may not link to a spine");
	expect_err(FILE_("", HOSTS, SW, LINKS ",{\"a\":\"p0l0\",\"b\":\"p1s0\"}"),
		   "links[6] (p0l0-p1s0): p0l0 is in plane 0 but p1s0 in plane 1");
	expect_err(FILE_("", HOSTS, SW, LINKS ",{\"a\":\"p0s0\",\"b\":\"p0l0\"}"),
		   "links[6] (p0l0-p0s0): duplicate of links[4]");
	expect_err(FILE_("", HOSTS, SW, LINKS ",{\"a\":\"p0l0\",\"b\":\"h1\"}"),
		   "links[6] (h1-p0l0): duplicate of links[1]");
	expect_err(FILE_("", HOSTS, SW, LINKS ",{\"a\":\"p0l0\",\"b\":\"p0l0\"}"),
		   "links[6] (p0l0-p0l0): a link needs two different nodes");
	expect_err(FILE_("", HOSTS, SW "," "{\"name\":\"p0l1\",\"tier\":\"leaf\",\"plane\":0,\"usid\":7}",
			 LINKS ",{\"a\":\"h0\",\"b\":\"p0l1\"}"),
		   "links[6] (h0-p0l1): host h0 already has a link in plane 0 (to p0l0)");
	expect_err(FILE_("", HOSTS, SW,
			 "{\"a\":\"h0\",\"b\":\"p0l0\"},{\"a\":\"h1\",\"b\":\"p0l0\"},"
			 "{\"a\":\"h0\",\"b\":\"p1l0\"}"),
		   "host h1 has no link to a leaf of plane 1");
	expect_err(FILE_("", HOSTS, SW, LINKS ",{\"a\":\"p0l0\",\"b\":\"p0s0\",\"mtu\":70000}"),
		   "links[6].mtu: 70000 is not in 1280..65535");
	expect_err(FILE_("", HOSTS, SW, LINKS ",{\"a\":\"p0l0\",\"b\":\"p0s0\",\"speed\":1}"),
		   "links[6]: unknown field 'speed'");
	expect_err(FILE_("", HOSTS, SW, "{\"a\":1,\"b\":\"p0l0\"}"), "links[0].a: must be a string");
}

/* A file that passes every field check but whose plane has no leaf. */
static void test_plane_without_leaf(void **state)
{
	(void)state;
	expect_err("{\"version\":1,\"planes\":2,\"hosts\":[],\"switches\":["
		   "{\"name\":\"p0l0\",\"tier\":\"leaf\",\"plane\":0,\"usid\":5}],\"links\":[]}",
		   "plane 1 has no leaf");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bases_are_valid),
		cmocka_unit_test(test_syntax_and_top_level),
		cmocka_unit_test(test_block),
		cmocka_unit_test(test_generate_form),
		cmocka_unit_test(test_nodes),
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_plane_without_leaf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
