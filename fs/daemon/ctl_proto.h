/* SPDX-License-Identifier: MIT */
/* ctl_proto.h -- the control socket's protocol: one request line in,
 * one reply out, then the daemon closes */
#ifndef DG_CTL_PROTO_H
#define DG_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A request is one line, at most CTL_REQ_MAX bytes with its newline
 * (the client may also end it by shutting down its side): a command and
 * its words, " json" for a JSON reply. The reply is text (one line a
 * record, every file name escaped: ctl_escape()) or JSON lines.
 *
 * "events since=N [json]" answers the events after N, oldest first, and
 * ends with the line "next M" (M: the number to ask after next; "next M
 * more" when the reply stopped at CTL_EVENTS_PAGE bytes and more are
 * waiting). A follower reads M from that last line only, never from an
 * event's text (a file name may say anything).
 */
#define CTL_REQ_MAX	 4400	/* a replace names a path */
/* "scrub start [rate=BYTES] [threads=N]": N from 1 to this (the engine's
 * DG_PAR_MAX_THREADS, which scrub.c checks it equals). */
#define CTL_SCRUB_MAX_THREADS 16u
#define CTL_EVENTS_PAGE	 (256u << 10)

enum ctl_cmd {
	CTL_UNKNOWN,
	CTL_STATUS,
	CTL_EVENTS,
	CTL_SCRUB_STATUS,
	CTL_SCRUB,		/* start, pause, resume, cancel */
	CTL_REPLACE_STATUS,
	CTL_REPLACE,		/* replace start ... */
	CTL_CLEAR,
	CTL_SYNC,		/* commit what -o wb_max holds */
};

struct ctl_request {
	enum ctl_cmd cmd;
	bool json, verbose;
	uint64_t since;		/* events */
	const char *args;	/* scrub/replace: the line after "scrub " or
				 * "replace " (what dg_scrub_cmd and
				 * dg_replace_cmd take) */
};

/* How many bytes of buf (n received so far, eof: the client is done
 * sending) make the request line: > 0 the line's length without its
 * newline, 0 more is needed, -1 the line is too long (refuse it). */
long ctl_request_end(const char *buf, size_t n, bool eof);
/* Parse a request line (NUL-terminated, no newline; kept: args points
 * into it). Never fails: what it does not know is CTL_UNKNOWN. */
void ctl_request_parse(const char *line, struct ctl_request *r);
/* Whether the command changes or stops something: root's or the
 * mount's owner's only. */
bool ctl_request_privileged(const struct ctl_request *r);

/* s as `ls -b` writes a name: backslash, C escapes (\n, \t, ...) and
 * \ooo for control characters, bytes that are not UTF-8, C1 controls
 * and the code points that reorder or split lines; printable UTF-8 as
 * it is. Writes at most cap bytes (cap > 0) NUL-terminated, cutting only
 * between escapes; returns dst. 4 * strlen(s) + 1 is always enough. */
char *ctl_escape(char *dst, size_t cap, const char *s);

/* The events reply's last line, "next M" or "next M more": 0 and *next,
 * *more, *body (bytes before that line) when the reply ends with it,
 * -1 when it does not. */
int ctl_events_trailer(const char *reply, size_t len, uint64_t *next,
		       bool *more, size_t *body);

#endif /* DG_CTL_PROTO_H */
