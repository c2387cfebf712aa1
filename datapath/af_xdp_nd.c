/* The af_xdp datapath's source MAC: the plane NIC's own (af_xdp.h).  The
 * next hop's comes from datapath/nexthop.c. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "datapath/af_xdp.h"

int mrc__dp_xdp_nic_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq r;
	memset(&r, 0, sizeof(r));
	snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", ifname);
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = ioctl(fd, SIOCGIFHWADDR, &r) ? -errno : 0;
	close(fd);
	if (!rc)
		memcpy(mac, r.ifr_hwaddr.sa_data, 6);
	return rc;
}
