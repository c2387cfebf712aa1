/* Sysctls for SRv6 nodes, written through /proc/sys.  /proc/sys/net shows
 * the namespace of the calling thread, so these act on the current one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "srv6/nl.h"
#include "srv6/nl_internal.h"

static int check_key(const char *key)
{
	if (!key || strncmp(key, "net/", 4) || strstr(key, "..") || strstr(key, "//"))
		return -EINVAL;
	for (const char *p = key; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("_-./@", *p)))
			return -EINVAL;
	return strlen(key) < 200 ? 0 : -EINVAL;
}

int mrc_nl_sysctl_set(const char *key, const char *value)
{
	char path[256];
	size_t n;
	ssize_t w;
	int fd, rc = 0;

	if (check_key(key) || !value)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/sys/%s", key);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = strlen(value);
	w = write(fd, value, n);
	if (w < 0)
		rc = -errno;
	else if ((size_t)w != n)
		rc = -EIO;
	close(fd);
	return rc;
}

int mrc_nl_sysctl_get(const char *key, char *buf, size_t len)
{
	char path[256];
	ssize_t r;
	int fd;

	if (check_key(key) || !buf || len == 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/sys/%s", key);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read(fd, buf, len - 1);
	close(fd);
	if (r < 0)
		return -errno;
	buf[r] = '\0';
	if (r > 0 && buf[r - 1] == '\n')
		buf[r - 1] = '\0';
	return 0;
}

int mrc_nl_sysctl_srv6_ns(bool forwarding, bool seg6_enabled)
{
	static const char *const conf[] = { "all", "default" };
	char key[96];
	int rc;

	for (size_t i = 0; i < 2; i++) {
		/* DAD off first, so links created later are never tentative. */
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_dad", conf[i]);
		if ((rc = mrc_nl_sysctl_set(key, "0")))
			return rc;
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/seg6_enabled", conf[i]);
		if ((rc = mrc_nl_sysctl_set(key, seg6_enabled ? "1" : "0")))
			return rc;
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/forwarding", conf[i]);
		if ((rc = mrc_nl_sysctl_set(key, forwarding ? "1" : "0")))
			return rc;
	}
	return 0;
}

int mrc_nl_sysctl_srv6_if(const char *ifname, bool seg6_enabled)
{
	char key[96];
	int rc;

	if (mrc__nl_check_ifname(ifname))
		return -EINVAL;
	snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_dad", ifname);
	if ((rc = mrc_nl_sysctl_set(key, "0")))
		return rc;
	snprintf(key, sizeof(key), "net/ipv6/conf/%s/seg6_enabled", ifname);
	return mrc_nl_sysctl_set(key, seg6_enabled ? "1" : "0");
}
