/* The Grafana dashboard (tools/grafana/mrc-dashboard.json) against a real
 * mrcd's Prometheus endpoint: every metric a panel queries is a family
 * mrcd exports (its "# TYPE" lines; a histogram's _bucket/_sum/_count),
 * every label a query groups by or matches on is one that family carries
 * (checked where the loopback daemon has samples of it), and the
 * dashboard is well formed (a title, a uid, panels with queries on the
 * ${datasource} variable).  A renamed metric thus fails here, not on an
 * operator's empty graph. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <jansson.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/skip.h"

#define DASH "tools/grafana/mrc-dashboard.json"
#define MAXFAM 256

struct fam {
	char name[96];
	char labels[256];     /* ",a,b," as seen in samples; "" without samples */
};
static struct fam fams[MAXFAM];
static int nfam;

static char *http_metrics(unsigned port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	const char *get = "GET /metrics HTTP/1.0\r\n\r\n";
	assert_int_equal(send(fd, get, strlen(get), MSG_NOSIGNAL), (ssize_t)strlen(get));
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	ssize_t k;
	while ((k = recv(fd, buf + n, cap - n - 1, 0)) > 0) {
		n += (size_t)k;
		if (cap - n < 4096) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	close(fd);
	buf[n] = 0;
	assert_non_null(strstr(buf, "200 OK"));
	return buf;
}

static struct fam *find(const char *name)
{
	for (int i = 0; i < nfam; i++)
		if (!strcmp(fams[i].name, name))
			return &fams[i];
	return NULL;
}

/* The family a sample name belongs to (histogram suffixes stripped). */
static struct fam *family_of(const char *name)
{
	struct fam *f = find(name);
	if (f)
		return f;
	static const char *suf[] = { "_bucket", "_sum", "_count" };
	for (int i = 0; i < 3; i++) {
		size_t n = strlen(name), s = strlen(suf[i]);
		if (n > s && !strcmp(name + n - s, suf[i])) {
			char b[96];
			snprintf(b, sizeof(b), "%.*s", (int)(n - s), name);
			if ((f = find(b)))
				return f;
		}
	}
	return NULL;
}

/* Past a label's quoted value and its comma: name="v", -> the next name;
 * NULL when there is no closing quote. */
static const char *after_value(const char *p)
{
	const char *q = strchr(p, '"');
	q = q ? strchr(q + 1, '"') : NULL;
	if (!q)
		return NULL;
	return q[1] == ',' ? q + 2 : q + 1;
}

static void parse_exposition(char *text)
{
	nfam = 0;
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		char name[96];
		if (sscanf(l, "# TYPE %95s", name) == 1) {
			assert_true(nfam < MAXFAM);
			snprintf(fams[nfam++].name, sizeof(fams[0].name), "%s", name);
			continue;
		}
		if (l[0] == '#' || sscanf(l, "%95[a-z0-9_]", name) != 1)
			continue;
		struct fam *f = family_of(name);
		const char *br = strchr(l, '{');
		if (!f || !br)
			continue;
		/* labels: name="v",name2="v2" */
		for (const char *p = br + 1; *p && *p != '}';) {
			char lab[64];
			if (sscanf(p, "%63[a-z_]=", lab) != 1)
				break;
			char key[70];
			snprintf(key, sizeof(key), ",%.63s,", lab);
			if (!strstr(f->labels, key)) {
				size_t n = strlen(f->labels);
				snprintf(f->labels + n, sizeof(f->labels) - n, "%s%s,", n ? "" : ",", lab);
			}
			if (!(p = after_value(p)))
				break;
		}
	}
}

/* Labels a query names: inside by (...), and matchers inside {...}. */
static int labels_in(const char *e, char out[][64], int max)
{
	int n = 0;
	for (const char *p = e; (p = strstr(p, "by (")) && n < max;) {
		p += 4;
		while (*p && *p != ')' && n < max) {
			while (*p == ' ' || *p == ',')
				p++;
			if (sscanf(p, "%63[a-z_]", out[n]) == 1) {
				p += strlen(out[n]);
				n++;
			} else {
				break;
			}
		}
	}
	for (const char *p = e; (p = strchr(p, '{')) && n < max;) {
		p++;
		while (*p && *p != '}' && n < max) {
			if (sscanf(p, "%63[a-z_]", out[n]) == 1)
				p += strlen(out[n]), n++;
			if (!(p = after_value(p)))
				break;
		}
	}
	return n;
}

static void test_dashboard_metrics_exist(void **state)
{
	(void)state;
	if (!mrcd_spawn_available())
		MRC_SKIP("build/bin/mrcd not built");
	json_error_t je;
	json_t *d = json_load_file(DASH, 0, &je);
	if (!d)
		fail_msg("%s:%d: %s", DASH, je.line, je.text);
	assert_true(json_is_string(json_object_get(d, "title")));
	assert_true(json_is_string(json_object_get(d, "uid")));
	json_t *panels = json_object_get(d, "panels");
	assert_true(json_is_array(panels) && json_array_size(panels) > 0);

	struct mrcd_proc p;
	const char *argv[] = { "--metrics_listen=auto", NULL };
	assert_int_equal(mrcd_spawn_start(&p, argv), 0);
	char *text = http_metrics(p.port + 1);
	mrcd_spawn_stop(&p);
	parse_exposition(text);
	free(text);
	assert_true(nfam > 20);

	int queries = 0, metrics = 0, labchk = 0, labskip = 0;
	size_t i;
	json_t *pa;
	json_array_foreach(panels, i, pa) {
		const char *type = json_string_value(json_object_get(pa, "type"));
		const char *title = json_string_value(json_object_get(pa, "title"));
		assert_non_null(type);
		assert_non_null(title);
		if (!strcmp(type, "row"))
			continue;
		json_t *ds = json_object_get(pa, "datasource");
		assert_string_equal(json_string_value(json_object_get(ds, "uid")), "${datasource}");
		json_t *tg = json_object_get(pa, "targets");
		if (!json_is_array(tg) || !json_array_size(tg))
			fail_msg("panel '%s' has no query", title);
		size_t j;
		json_t *t;
		json_array_foreach(tg, j, t) {
			const char *e = json_string_value(json_object_get(t, "expr"));
			if (!e)
				fail_msg("panel '%s': a target without expr", title);
			queries++;
			struct fam *used[16];
			int nused = 0;
			for (const char *s = e; (s = strstr(s, "mrc_"));) {
				char name[96];
				if (s > e && (s[-1] == '_' || (s[-1] >= 'a' && s[-1] <= 'z'))) {
					s++;
					continue;
				}
				sscanf(s, "%95[a-z0-9_]", name);
				s += strlen(name);
				struct fam *f = family_of(name);
				if (!f)
					fail_msg("panel '%s': metric %s is not exported by mrcd (query: %s)", title,
						 name, e);
				metrics++;
				if (nused < 16)
					used[nused++] = f;
			}
			if (!nused)
				fail_msg("panel '%s': query names no mrc metric: %s", title, e);
			char labs[16][64];
			int nl = labels_in(e, labs, 16);
			for (int k = 0; k < nl; k++) {
				if (!strcmp(labs[k], "instance") || !strcmp(labs[k], "le") ||
				    !strcmp(labs[k], "job"))
					continue;
				char key[70];
				snprintf(key, sizeof(key), ",%.63s,", labs[k]);
				int seen = 0, known = 0;
				for (int u = 0; u < nused; u++) {
					if (!used[u]->labels[0])
						continue;
					known = 1;
					seen |= strstr(used[u]->labels, key) != NULL;
				}
				if (!known) {
					labskip++;
					continue;
				}
				if (!seen)
					fail_msg("panel '%s': label '%s' is on none of the metrics of: %s", title,
						 labs[k], e);
				labchk++;
			}
		}
	}
	printf("%d queries, %d metric references (of %d families mrcd exports), %d labels checked, "
	       "%d not checkable without samples on loopback\n", queries, metrics, nfam, labchk, labskip);
	json_decref(d);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_dashboard_metrics_exist),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
