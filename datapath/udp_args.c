/* The udp provider's datapath_args (udp.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "datapath/udp.h"

/* datapath_args: comma- or space-separated words, gso=on|off|auto
 * (default auto) and gro=on|off (default on); any other word is an error
 * that names it, so a misspelt option cannot silently do nothing. */
int mrc__dp_udp_args(const char *s, int *gso, int *gro, char *why, size_t whylen)
{
	*gso = OPT_AUTO;
	*gro = OPT_ON;
	for (const char *p = s ? s + strspn(s, ", \t") : NULL; p && *p;) {
		size_t n = strcspn(p, ", \t");
		int *o = NULL, bad = 0;
		const char *v = p + 4;
		size_t vn = n > 4 ? n - 4 : 0;
		if (n > 4 && !strncmp(p, "gso=", 4))
			o = gso;
		else if (n > 4 && !strncmp(p, "gro=", 4))
			o = gro;
		if (!o) {
			if (why)
				snprintf(why, whylen, "datapath_args: unknown option '%.*s' "
					 "(udp takes gso=on|off|auto, gro=on|off)", (int)n, p);
			return -EINVAL;
		}
		if (vn == 2 && !strncmp(v, "on", 2))
			*o = OPT_ON;
		else if (vn == 3 && !strncmp(v, "off", 3))
			*o = OPT_OFF;
		else if (vn == 4 && !strncmp(v, "auto", 4) && o == gso)
			*o = OPT_AUTO;
		else
			bad = 1;
		if (bad) {
			if (why)
				snprintf(why, whylen, "datapath_args: %.4s takes %s, not '%.*s'", p,
					 o == gso ? "on, off or auto" : "on or off", (int)vn, v);
			return -EINVAL;
		}
		p += n;
		p += strspn(p, ", \t");
	}
	return 0;
}
