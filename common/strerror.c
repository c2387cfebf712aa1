/* mrc_strerror: errno text, sharpened for the meanings mrc gives them. */
#include <errno.h>
#include <string.h>

#include "mrc/error.h"

const char *mrc_strerror(int err)
{
	if (err > 0)
		err = -err;
	switch (err) {
	case 0: return "success";
	case -EACCES: return "remote access violation (key, bounds or rights)";
	case -ETIMEDOUT: return "retries exhausted: peer unreachable on every path";
	case -ENETUNREACH: return "no usable path to the peer (every path denied)";
	case -ENOBUFS: return "receiver not ready: no receive posted within rnr_retry retries";
	case -EOVERFLOW: return "completions lost: the CQ was not polled while it and as many more in mrcd filled "
		"(peers' WRITE_IMMs need no posted receive); the QP is in error: poll sooner, "
		"or give cq_entries room for all the WRITE_IMMs peers may send unpolled";
	case -ECANCELED: return "work request flushed: queue pair in error state";
	case -EMSGSIZE: return "message larger than the posted receive buffer or limit";
	case -EBADMSG: return "malformed packet";
	case -ENOSPC: return "queue full";
	case -ENOTCONN: return "queue pair not connected";
	case -EPROTO: return "protocol violation by the peer";
	case -ENOKEY: return "memory key is not one of this client's regions";
	case -ERANGE: return "offset and length outside the registered region";
	case -EDQUOT: return "limit reached, of this client or of its user (QPs, memory, regions or ring size)";
	case -EUSERS: return "too many clients, in all or of this user";
	case -EADDRINUSE: return "service id listened on or reserved by another user";
	case -EOPNOTSUPP: return "not supported: an unknown opcode or request, or memory mrcd cannot map in place";
	default: return strerror(-err);
	}
}
