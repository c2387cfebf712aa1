/* The daemon's log (to the journal under systemd, else to the terminal)
 * and its clock (core.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "common/clock.h"
#include "daemon/core/core.h"

int mrcd_log_level = MRCD_LOG_INFO;

uint64_t mrcd_now(void)
{
	return mrc__mono_ns();
}

/* Under systemd (JOURNAL_STREAM set), plain lines go to stderr, which is
 * the journal, with a "<N>" prefix for the priority (SyslogLevelPrefix=yes
 * is the default); lines with structured fields go through the journal's
 * native protocol (libsystemd), so `journalctl MRC_PEER=h7` finds them.
 * On a terminal the level is written as a word and the fields dropped. */
static void vlog(int level, const char *const *kv, int nkv, const char *fmt, va_list ap)
{
	if (level > mrcd_log_level)
		return;
	static int journal = -1;
	if (journal < 0)
		journal = getenv("JOURNAL_STREAM") != NULL;
	static const char *names[] = { "", "", "", "error", "warning", "notice", "info", "debug" };
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (journal && nkv > 0) {
		char m[1040], pri[16];
		struct iovec iov[3 + MRCD_LOG_MAX_KV];
		int n = 0;
		snprintf(m, sizeof(m), "MESSAGE=%s", msg);
		snprintf(pri, sizeof(pri), "PRIORITY=%d", level);
		iov[n++] = (struct iovec){ m, strlen(m) };
		iov[n++] = (struct iovec){ pri, strlen(pri) };
		iov[n++] = (struct iovec){ (char *)"SYSLOG_IDENTIFIER=mrcd", 22 };
		for (int i = 0; i < nkv && i < MRCD_LOG_MAX_KV; i++)
			iov[n++] = (struct iovec){ (char *)kv[i], strlen(kv[i]) };
		if (sd_journal_sendv(iov, n) >= 0)
			return;
	}
	if (journal)
		fprintf(stderr, "<%d>%s\n", level, msg);
	else
		fprintf(stderr, "mrcd: %s: %s\n", names[level & 7], msg);
}

void mrcd_log(int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(level, NULL, 0, fmt, ap);
	va_end(ap);
}

void mrcd_log_kv(int level, const char *const *kv, int nkv, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(level, kv, nkv, fmt, ap);
	va_end(ap);
}
