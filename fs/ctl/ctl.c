// SPDX-License-Identifier: MIT
/* ctl.c -- daxguard-ctl: ask a mounted volume's daemon for status, a
 * scrub or its events */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <json.h>

#include "ctl_proto.h"
#include "util.h"
#include "version.h"

static const char usage[] =
	"usage: daxguard-ctl MOUNTPOINT status [-v] [--json]\n"
	"       daxguard-ctl MOUNTPOINT scrub [start] [-w] [--rate MB/s] "
	"[--threads N] [--json]\n"
	"       daxguard-ctl MOUNTPOINT scrub status|pause|cancel [--json]\n"
	"       daxguard-ctl MOUNTPOINT scrub resume [-w] [--json]\n"
	"       daxguard-ctl MOUNTPOINT events [--follow] [--json]\n"
	"       daxguard-ctl MOUNTPOINT replace DEV NEWPATH [--rate MB/s] "
	"[--json]\n"
	"       daxguard-ctl MOUNTPOINT replace status [--json]\n"
	"       daxguard-ctl MOUNTPOINT clear\n"
	"       daxguard-ctl MOUNTPOINT sync [--json]\n";

static const char help_text[] =
	"Ask the daemon of a mounted daxguard volume (MOUNTPOINT or any\n"
	"directory in it) what it has seen, or to act.\n"
	"\n"
	"commands:\n"
	"  status          health, devices with their counters, capacity\n"
	"  scrub start     verify every written page and all parity in the\n"
	"                  background, repairing what fails; returns at once\n"
	"                  (root or the mount's owner)\n"
	"  scrub           the same, waiting for the end (scrub start -w)\n"
	"  scrub status    where the scrub is: progress, rate, ETA, findings\n"
	"  scrub pause     stop it, keeping its position (kept across an\n"
	"                  unmount or a crash)\n"
	"  scrub resume    go on from the position\n"
	"  scrub cancel    stop it for good\n"
	"  events          faults found, repaired or not, scrubs, devices\n"
	"                  missing, oldest first, from the daemon's ring\n"
	"  replace DEV NEWPATH\n"
	"                  rebuild device DEV (its index, or its path) onto\n"
	"                  NEWPATH, a new or blank file or device, while the\n"
	"                  volume stays mounted; returns at once, 'status'\n"
	"                  shows how far (kept across an unmount or a crash);\n"
	"                  at the end NEWPATH is the device (root or the\n"
	"                  mount's owner)\n"
	"  replace status  where the replace is\n"
	"  clear           reset the fault counters (root or the mount's owner)\n"
	"  sync            commit what a -o writeback,wb_max mount holds (the\n"
	"                  kernel does not pass sync(1) on to the daemon)\n"
	"options:\n"
	"  -v, --verbose   status: the damaged files too\n"
	"  -w, --wait      scrub start/resume: wait until it ends, then print\n"
	"                  its status (an interrupt cancels it)\n"
	"  --rate MB/s     scrub start: verify at most this many megabytes\n"
	"                  (10^6 bytes) a second; replace: rebuild at most\n"
	"                  this many megabytes of the device a second\n"
	"  --threads N     scrub start: verify with N threads, 1 to 16\n"
	"                  (default: one a CPU the daemon may use)\n"
	"  -f, --follow    events: keep printing new ones until interrupted\n"
	"  --json          print the reply as JSON (events: one object a line)\n"
	"  -h, --help      show this help and exit\n"
	"  -V, --version   show the version and exit\n"
	"\n"
	"File names in text output are escaped as ls -b does (\\n, \\t,\n"
	"\\ooo, \\\\); users other than root see only the paths of files\n"
	"they could stat themselves.\n"
	"\n"
	"Exit status: 0 done (a scrub: clean or all repaired), 1 the daemon\n"
	"cannot be reached or refused, 2 bad usage, 3 a scrub found damage it\n"
	"could not repair.\n";

/* Exit codes: as btrfs scrub, 3 when a scrub found what it could not
 * repair. */
#define EXIT_FAIL	   1
#define EXIT_USAGE	   2
#define EXIT_UNRECOVERABLE 3

/* How often -w and --follow ask again: each answer is immediate, the
 * daemon keeps no connection open for a waiting client. */
#define POLL_MS 200

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int not_a_mount(const char *mnt, int err)
{
	if (err == ENOTCONN)
		tool_error(EXIT_FAIL, "'%s': %s: its daemon is gone; run "
			   "'fusermount3 -u %s' and mount it again", mnt,
			   strerror(err), mnt);
	else
		tool_error(EXIT_FAIL, "'%s' is not a daxguard mount: %s", mnt,
			   strerror(err));
	return EXIT_FAIL;
}

/* Send one request line and return the whole reply (caller frees), or
 * NULL after saying why. An empty reply is one only for events (none
 * new); every other request has an answer. */
static char *request_any(const char *mnt, const char *req, bool empty_ok)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *reply = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd;

	n = getxattr(mnt, "user.daxguard.socket", sa.sun_path,
		     sizeof(sa.sun_path) - 1);
	if (n < 0) {
		not_a_mount(mnt, errno);
		return NULL;
	}
	sa.sun_path[n] = 0;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		tool_error(EXIT_FAIL, "cannot reach the daemon at '%s': %s",
			   sa.sun_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (write(fd, req, strlen(req)) < 0) {
		tool_error(EXIT_FAIL, "send: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *r = realloc(reply, cap = 2 * cap + 8192);

			if (!r) {
				tool_error(EXIT_FAIL, "out of memory");
				free(reply);
				close(fd);
				return NULL;
			}
			reply = r;
		}
		n = read(fd, reply + len, 4096);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	reply[len] = 0;
	if (!len && !empty_ok) {
		tool_error(EXIT_FAIL, "the daemon closed the connection "
			   "without a reply");
		free(reply);
		return NULL;
	}
	return reply;
}

static char *request(const char *mnt, const char *req)
{
	return request_any(mnt, req, false);
}

static bool is_error(const char *reply)
{
	return !strncmp(reply, "error", 5) || !strncmp(reply, "{\"error\"", 8);
}

/* Print the reply, a refusal too, on standard output (a script reading
 * --json gets {"error": ...} where it reads the answer); 0, or
 * EXIT_FAIL when it is an error. */
static int print_reply(char *reply)
{
	int ret;

	if (!reply)
		return EXIT_FAIL;
	ret = is_error(reply) ? EXIT_FAIL : 0;
	fputs(reply, stdout);
	free(reply);
	return ret;
}

static uint64_t jget_u64(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v)
		       ? (uint64_t)json_object_get_int64(v) : 0;
}

static const char *jget_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v)
						    : "";
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * The progress of a waited-for scrub on stderr (stdout keeps the final
 * report, --json's object too): on a terminal one line rewritten with
 * \r at each poll; else a line at each further 10% or every
 * PROGRESS_EVERY_MS, so that a log shows it is moving without a flood.
 */
#define PROGRESS_EVERY_MS 5000

struct progress_out {
	bool tty;
	bool shown;		/* a \r line is on the terminal */
	int last_tenth;		/* the 10% step last printed (not a tty) */
	struct timespec last;	/* when a line was last printed */
};

static uint64_t ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)((now.tv_sec - t->tv_sec) * 1000 +
			  (now.tv_nsec - t->tv_nsec) / 1000000);
}

static void show_progress(struct progress_out *po, struct json_object *st)
{
	uint64_t rows = jget_u64(st, "rows"), next = jget_u64(st, "next_row");
	double pct = rows ? 100.0 * (double)next / (double)rows : 0;
	char done[32], total[32], rate[32], eta[32] = "ETA unknown";
	struct json_object *v;
	int64_t eta_s = -1;
	int tenth = (int)(pct / 10);

	if (!po->tty && tenth <= po->last_tenth &&
	    ms_since(&po->last) < PROGRESS_EVERY_MS)
		return;
	if (json_object_object_get_ex(st, "eta_s", &v))
		eta_s = json_object_get_int64(v);
	human_bytes(jget_u64(st, "bytes_scanned"), done, sizeof(done));
	human_bytes(jget_u64(st, "bytes_total"), total, sizeof(total));
	human_bytes(jget_u64(st, "rate_bytes_per_s"), rate, sizeof(rate));
	if (eta_s >= 0)
		snprintf(eta, sizeof(eta), "ETA %" PRId64 ":%02" PRId64
			 ":%02" PRId64, eta_s / 3600, eta_s / 60 % 60,
			 eta_s % 60);
	fprintf(stderr, "%sscrub: %.1f%% done, %s of %s, %s/s, %s%s",
		po->tty ? "\r" : "", pct, done, total, rate, eta,
		po->tty ? "\033[K" : "\n");
	fflush(stderr);
	po->shown = po->tty;
	po->last_tenth = tenth;
	clock_gettime(CLOCK_MONOTONIC, &po->last);
}

/*
 * scrub start -w / resume -w (btrfs scrub start -B): ask for the
 * status until the scrub is no longer running, then print it as the
 * user asked. An interrupt cancels the scrub, as btrfs does, so that a
 * ^C'd scrub does not go on behind the user's back.
 */
static int scrub_wait(const char *mnt, bool json)
{
	struct json_object *st = NULL;
	struct progress_out po = { .tty = isatty(STDERR_FILENO) };
	char *reply;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &po.last);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (;;) {
		reply = request(mnt, "scrub status json\n");
		if (!reply)
			return EXIT_FAIL;
		st = json_tokener_parse(reply);
		free(reply);
		if (!st) {
			tool_error(EXIT_FAIL, "a scrub status that is not JSON");
			return EXIT_FAIL;
		}
		if (strcmp(jget_str(st, "state"), "running"))
			break;
		show_progress(&po, st);
		json_object_put(st);
		if (interrupted) {
			print_reply(request(mnt, "scrub cancel\n"));
			interrupted = 0;
			continue;	/* print where it stopped */
		}
		sleep_ms(POLL_MS);
	}
	if (po.shown)
		fputc('\n', stderr);	/* the report starts on a line of its own */
	ret = 0;
	if (!strcmp(jget_str(st, "state"), "cancelled") ||
	    !strcmp(jget_str(st, "state"), "paused")) {
		fprintf(stderr, "daxguard-ctl: the scrub was %s before it "
			"ended\n", jget_str(st, "state"));
		ret = EXIT_FAIL;
	}
	/* Pages a file held, or parity and checksum pages, that nothing
	 * could rebuild: damage it could not repair. Free pages it reset
	 * are repaired. */
	if (jget_u64(st, "unrecoverable_in_use") ||
	    jget_u64(st, "unrecoverable_not_reset"))
		ret = EXIT_UNRECOVERABLE;
	json_object_put(st);
	reply = request(mnt, json ? "scrub status json\n" : "scrub status\n");
	if (!reply)
		return EXIT_FAIL;
	fputs(reply, stdout);
	free(reply);
	return ret;
}

/*
 * events, and --follow: ask for the events after the last one shown,
 * by the number the daemon's reply ends with ("next N", ctl_proto.h),
 * never by anything read in the events themselves (a file name may say
 * anything). A reply cut short ("next N more") is followed at once.
 */
static int events(const char *mnt, bool json, bool follow)
{
	uint64_t seq = 0;
	char req[64];

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, on_signal);
	for (;;) {
		char *reply;
		size_t body;
		bool more = false;

		snprintf(req, sizeof(req), "events since=%llu%s\n",
			 (unsigned long long)seq, json ? " json" : "");
		reply = request_any(mnt, req, true);
		if (!reply)
			return EXIT_FAIL;
		if (is_error(reply))
			return print_reply(reply);
		if (ctl_events_trailer(reply, strlen(reply), &seq, &more,
				       &body)) {
			tool_error(EXIT_FAIL, "an events reply without its "
				   "last line (a daemon of another version?)");
			free(reply);
			return EXIT_FAIL;
		}
		fwrite(reply, 1, body, stdout);
		fflush(stdout);
		free(reply);
		if (interrupted || (!more && !follow))
			return 0;
		if (!more)
			sleep_ms(POLL_MS);
	}
}

/* --threads N: 1 to CTL_SCRUB_MAX_THREADS, in digits only (strtoul()
 * alone takes " 4", "+4" and "-4"); 0 on a bad value. */
static unsigned parse_threads(const char *arg)
{
	unsigned long n = 0;
	const char *p;

	for (p = arg; *p >= '0' && *p <= '9' && n <= CTL_SCRUB_MAX_THREADS;
	     p++)
		n = n * 10 + (unsigned long)(*p - '0');
	if (p == arg || *p || n < 1 || n > CTL_SCRUB_MAX_THREADS)
		return 0;
	return (unsigned)n;
}

/* MB/s (10^6 bytes), as given, to bytes a second; 0 on a bad value. */
static uint64_t parse_rate(const char *s)
{
	char *end;
	double mb;

	errno = 0;
	mb = strtod(s, &end);
	if (errno || end == s || *end || !(mb > 0) || !isfinite(mb) ||
	    mb > 1e9)
		return 0;
	return (uint64_t)(mb * 1e6) ? (uint64_t)(mb * 1e6) : 1;
}

static int bad_option(const char *opt)
{
	usage_error("unknown option '%s'", opt);
}

int main(int argc, char **argv)
{
	bool json = false, verbose = false, wait = false, follow = false;
	uint64_t rate = 0;
	unsigned threads = 0;	/* 0: the daemon's default */
	const char *cmd, *mnt, *sub = NULL;
	char req[4400];
	const char *rdev = NULL, *rpath = NULL;
	int i;

	tool_init("daxguard-ctl", usage, EXIT_USAGE);
	if (tool_argv_has(argc, argv, "--json", 0))
		tool_json_errors();
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			fputs(help_text, stdout);
			return 0;
		}
		if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
			printf("daxguard-ctl (daxguard) %s\n", DG_VERSION);
			return 0;
		}
	}
	if (argc < 3)
		usage_error("MOUNTPOINT and a command are needed");
	mnt = argv[1];
	cmd = argv[2];
	if (strcmp(cmd, "status") && strcmp(cmd, "scrub") &&
	    strcmp(cmd, "clear") && strcmp(cmd, "events") &&
	    strcmp(cmd, "replace") && strcmp(cmd, "sync")) {
		usage_error("unknown command '%s'", cmd);
	}
	i = 3;
	if (!strcmp(cmd, "scrub")) {
		/* A bare "scrub" is the synchronous scrub it always was. */
		if (i < argc && argv[i][0] != '-')
			sub = argv[i++];
		else
			wait = true;
		if (!sub)
			sub = "start";
		if (strcmp(sub, "start") && strcmp(sub, "status") &&
		    strcmp(sub, "pause") && strcmp(sub, "resume") &&
		    strcmp(sub, "cancel")) {
			usage_error("unknown scrub command '%s'", sub);
		}
	}
	if (!strcmp(cmd, "replace")) {
		/* "replace status", or "replace DEV NEWPATH" */
		if (i < argc && !strcmp(argv[i], "status")) {
			sub = "rstatus";
			i++;
		} else if (i + 1 < argc && argv[i][0] != '-' &&
			   argv[i + 1][0]) {
			rdev = argv[i++];
			rpath = argv[i++];
			sub = "rstart";
		} else {
			usage_error("replace takes DEV NEWPATH (or status)");
		}
		if (strlen(rpath ? rpath : "") > 4000)
			usage_error("NEWPATH is too long");
	}
	for (; i < argc; i++) {
		const char *a = argv[i];
		bool can_wait = sub && (!strcmp(sub, "start") ||
					!strcmp(sub, "resume"));

		if (!strcmp(a, "--json") && strcmp(cmd, "clear")) {
			json = true;
		} else if ((!strcmp(a, "-v") || !strcmp(a, "--verbose")) &&
			   !strcmp(cmd, "status")) {
			verbose = true;
		} else if ((!strcmp(a, "-w") || !strcmp(a, "--wait")) &&
			   can_wait) {
			wait = true;
		} else if ((!strcmp(a, "-f") || !strcmp(a, "--follow")) &&
			   !strcmp(cmd, "events")) {
			follow = true;
		} else if (!strcmp(a, "--rate") && sub &&
			   (!strcmp(sub, "start") || !strcmp(sub, "rstart"))) {
			if (++i == argc || !(rate = parse_rate(argv[i])))
				usage_error("--rate takes megabytes a second, "
					    "a number above 0%s%s%s",
					    i < argc ? " (not '" : "",
					    i < argc ? argv[i] : "",
					    i < argc ? "')" : "");
		} else if (!strcmp(a, "--threads") && sub &&
			   !strcmp(sub, "start")) {
			if (++i == argc || !(threads = parse_threads(argv[i])))
				usage_error("--threads takes a number from 1 "
					    "to %u%s%s%s", CTL_SCRUB_MAX_THREADS,
					    i < argc ? " (not '" : "",
					    i < argc ? argv[i] : "",
					    i < argc ? "')" : "");
		} else {
			return bad_option(a);
		}
	}
	if (!strcmp(cmd, "events"))
		return events(mnt, json, follow);
	if (rpath) {
		/* The path last: it may hold spaces. */
		snprintf(req, sizeof(req), "replace start %s %llu %s\n", rdev,
			 (unsigned long long)rate, rpath);
		if (json)	/* the daemon looks for " json" in the line */
			snprintf(req, sizeof(req), "replace start %s %llu %s "
				 "json\n", rdev, (unsigned long long)rate,
				 rpath);
		return print_reply(request(mnt, req));
	}
	if (sub && !strcmp(sub, "rstatus")) {
		snprintf(req, sizeof(req), "replace status%s\n",
			 json ? " json" : "");
		return print_reply(request(mnt, req));
	}
	if (sub) {
		char *reply;

		if (!strcmp(sub, "start") && (rate || threads)) {
			char t[32] = "";

			if (threads)
				snprintf(t, sizeof(t), " threads=%u", threads);
			snprintf(req, sizeof(req), "scrub start rate=%llu%s%s\n",
				 (unsigned long long)rate, t,
				 json ? " json" : "");
		} else
			snprintf(req, sizeof(req), "scrub %s%s\n", sub,
				 json ? " json" : "");
		reply = request(mnt, req);
		if (!wait || !reply || is_error(reply))
			return print_reply(reply);
		free(reply);
		return scrub_wait(mnt, json);
	}
	snprintf(req, sizeof(req), "%s%s%s\n", cmd, json ? " json" : "",
		 verbose ? " verbose" : "");
	return print_reply(request(mnt, req));
}
