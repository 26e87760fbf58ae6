/* sandbox/egress_run.c — egress for one sandbox at create and teardown:
 * its own netns (<dir>/netns, net/netns.h) with the ruleset of its policy
 * (net/ruleset.h), /etc/resolv.conf and /etc/hosts generated and bind-mounted
 * read-only, and the EGRESS PROCESS that runs the DNS filter and the
 * transparent proxy (net/dnsfilter.h, net/proxy.h) on a poll loop.
 *
 * Why a process of its own (recorded in <dir>/egress.pid) and not the
 * monitor: a one-shot `run` has no monitor (the caller keeps the sandbox),
 * and one design must serve both; the monitor's loop stays the lifetime
 * keeper only.  Like the monitor it is double-forked (its own session, stdio
 * on /dev/null) and runs in the HOST netns, so upstream DNS queries and the
 * proxy's connections leave as its own; its LISTENING sockets are made in
 * the sandbox's netns by a thread that joined it (127.0.0.1:53 UDP+TCP for
 * DNS, 127.0.0.1 and ::1 port AN_SB_EGRESS_PROXY_PORT for the proxy: ports
 * below 1024 the sandbox cannot bind, having no capability over that netns).
 * SIGUSR1 makes it reload its policy from the options record (a live
 * change, egress_change.c).  It ends on SIGTERM/SIGKILL from teardown; `prune` removes it with the rest
 * of a sandbox whose monitor or creator died.
 *
 * Fail closed: the netns, ruleset, filter, proxy and the process are made
 * by create's prep thread (below) before the spec names the netns, so any
 * failure refuses the sandbox with its reason; every step's leftovers
 * (netns mount, files, process) are removed by an_sb_egress_prep_free or
 * teardown. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine/process.h"
#include "net/dnsfilter.h"
#include "net/egress.h"
#include "net/netns.h"
#include "net/proxy.h"
#include "net/ruleset.h"
#include "sandbox/egress_run.h"
#include "sandbox/opts_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/clock.h"

#define NETNS_FILE "netns"
#define PID_FILE "egress.pid"

struct listeners { int dns_udp, dns_tcp, proxy4, proxy6; };

static int bound(int family, int type, const char *addr, uint16_t port, an_error_t *err) {
  int fd = socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return an_error_set(err, errno, "egress: socket for %s:%u", addr, port);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_storage ss = {0};
  socklen_t len;
  if (family == AF_INET) {
    struct sockaddr_in *s = (void *) &ss;
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    inet_pton(AF_INET, addr, &s->sin_addr);
    len = sizeof *s;
  } else {
    struct sockaddr_in6 *s = (void *) &ss;
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    inet_pton(AF_INET6, addr, &s->sin6_addr);
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    len = sizeof *s;
  }
  if (bind(fd, (struct sockaddr *) &ss, len) < 0 || (type == SOCK_STREAM && listen(fd, 128) < 0)) {
    int e = errno;
    close(fd);
    return an_error_set(err, e, "egress: bind %s port %u in the sandbox netns", addr, port);
  }
  return fd;
}

static int make_listeners(void *ctx, an_error_t *err) {
  struct listeners *l = ctx;
  if ((l->dns_udp = bound(AF_INET, SOCK_DGRAM, "127.0.0.1", 53, err)) < 0) return l->dns_udp;
  if ((l->dns_tcp = bound(AF_INET, SOCK_STREAM, "127.0.0.1", 53, err)) < 0) return l->dns_tcp;
  if ((l->proxy4 = bound(AF_INET, SOCK_STREAM, "127.0.0.1", AN_SB_EGRESS_PROXY_PORT, err)) < 0) return l->proxy4;
  if (access("/proc/sys/net/ipv6", F_OK) == 0 &&
      (l->proxy6 = bound(AF_INET6, SOCK_STREAM, "::1", AN_SB_EGRESS_PROXY_PORT, err)) < 0)
    return l->proxy6;
  return 0;
}

static void close_listeners(struct listeners *l) {
  int *fds[] = {&l->dns_udp, &l->dns_tcp, &l->proxy4, &l->proxy6};
  for (size_t i = 0; i < 4; i++)
    if (*fds[i] >= 0) {
      close(*fds[i]);
      *fds[i] = -1;
    }
}

static int write_file(const char *dir, const char *name, const char *text, an_error_t *err) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return an_error_set(err, errno, "egress: write %s", p);
  size_t n = strlen(text);
  bool ok = write(fd, text, n) == (ssize_t) n;
  close(fd);
  return ok ? 0 : an_error_set(err, EIO, "egress: write %s", p);
}

static int add_ro_bind(struct an_spec *spec, const char *source, const char *dest, an_error_t *err) {
  struct an_spec_mount *m = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *m);
  if (!m) return an_error_set(err, ENOMEM, "spec mounts");
  spec->mounts = m;
  m = &spec->mounts[spec->n_mounts];
  memset(m, 0, sizeof *m);
  m->options = calloc(5, sizeof *m->options);
  spec->n_mounts++;   /* an_spec_free frees what was set */
  if (!m->options || !(m->destination = strdup(dest)) || !(m->type = strdup("bind")) ||
      !(m->source = strdup(source)) || !(m->options[0] = strdup("bind")) ||
      !(m->options[1] = strdup("ro")) || !(m->options[2] = strdup("nosuid")) ||
      !(m->options[3] = strdup("nodev")))
    return an_error_set(err, ENOMEM, "spec mounts");
  return 0;
}

/* resolv.conf and hosts of the sandbox, mounted where the image has them
 * (the root is read-only: no mount point can be made).  An image without
 * /etc/resolv.conf still resolves: libc then asks 127.0.0.1, the filter. */
static int dns_files(const char *dir, const char *rootfs, struct an_spec *spec, an_error_t *err) {
  static const struct { const char *name, *dest, *text; } files[] = {
    {"resolv.conf", "/etc/resolv.conf", "# made by agentnest: the sandbox's DNS filter\nnameserver 127.0.0.1\n"},
    {"hosts", "/etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"},
  };
  for (size_t i = 0; i < 2; i++) {
    int r = write_file(dir, files[i].name, files[i].text, err);
    if (r < 0) return r;
    char target[4096], src[4096];
    snprintf(target, sizeof target, "%s%s", rootfs, files[i].dest);
    struct stat st;
    if (lstat(target, &st) < 0 || !S_ISREG(st.st_mode)) continue;
    snprintf(src, sizeof src, "%s/%s", dir, files[i].name);
    if ((r = add_ro_bind(spec, src, files[i].dest, err)) < 0) return r;
  }
  return 0;
}

static int set_netns_path(struct an_spec *spec, const char *path, an_error_t *err) {
  for (size_t i = 0; i < spec->linux.n_namespaces; i++) {
    struct an_spec_namespace *ns = &spec->linux.namespaces[i];
    if (ns->clone_flag != CLONE_NEWNET) continue;
    free(ns->path);
    if (!(ns->path = strdup(path))) return an_error_set(err, ENOMEM, "spec");
    return 0;
  }
  return an_error_set(err, EINVAL, "egress: the spec has no network namespace");
}

#define FD_SET_MAX 4096
/* The egress process's soft RLIMIT_NOFILE (see helper_main), and the
 * proxy's connection cap that fits in it: 6 fds a spliced connection (two
 * sockets, two pipes), the filter's 256 pending queries and 32 TCP
 * clients, a dozen of its own, and room for libnftables' sockets:
 * 112 * 6 + 256 + 32 + 16 = 976 < 1024. */
#define EGRESS_NOFILE FD_SETSIZE
#define EGRESS_PROXY_CONNS 112

struct helper {
  const char *dir;
  struct an_egress_ctx ctx;
  /* the creator's fds open before the filter and proxy were made: the
   * egress process closes them (a caller's pipe held there would keep
   * `agentnest create | cat` waiting, a lock or workspace fd would outlive
   * the creator); what was opened after is the filter's and the proxy's */
  uint64_t inherited[FD_SET_MAX / 64];
  /* the events the sandbox's traffic makes, rate-limited (see sink) */
  uint64_t ev_tokens, ev_refill_ms, ev_suppressed;
};

/* the calling THREAD's fd table (the prep thread has one of its own) */
static void note_open_fds(struct helper *h) {
  DIR *d = opendir("/proc/thread-self/fd");
  struct dirent *e;
  int self = d ? dirfd(d) : -1;
  while (d && (e = readdir(d))) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == self || fd < 3 || fd >= FD_SET_MAX) continue;
    h->inherited[fd / 64] |= 1ull << (fd % 64);
  }
  if (d) closedir(d);
}

static void close_inherited(const struct helper *h, int keep) {
  for (int fd = 3; fd < FD_SET_MAX; fd++)
    if (fd != keep && (h->inherited[fd / 64] & (1ull << (fd % 64)))) close(fd);
}

/* Each DNS query and connection of the sandbox is an event line in its
 * events.jsonl, on the host's disk and outside the workspace quota: a
 * sandbox asking ~70000 names a second grew it by 3.6 MB/s.  A token bucket
 * lets EVENTS_BURST through at once and EVENTS_PER_S after; what it drops is
 * counted, and the count is written (an "egress_suppressed" event) before
 * the next event that passes.  The ruleset's and the filter's counters
 * still count everything. */
#define EVENTS_PER_S 50
#define EVENTS_BURST 500

static bool event_admitted(struct helper *h) {
  uint64_t now = an_mono_ms();
  if (!h->ev_refill_ms) {
    h->ev_refill_ms = now;
    h->ev_tokens = EVENTS_BURST;
  }
  uint64_t add = (now - h->ev_refill_ms) * EVENTS_PER_S / 1000;
  if (add) {
    h->ev_tokens = h->ev_tokens + add > EVENTS_BURST ? EVENTS_BURST : h->ev_tokens + add;
    h->ev_refill_ms += add * 1000 / EVENTS_PER_S;
  }
  if (!h->ev_tokens) {
    h->ev_suppressed++;
    return false;
  }
  h->ev_tokens--;
  if (h->ev_suppressed) {
    an_sb_event(h->dir, "egress_suppressed", ",\"events\":%llu", (unsigned long long) h->ev_suppressed);
    h->ev_suppressed = 0;
  }
  return true;
}

static void sink(void *c, const struct an_net_event *ev) {
  struct helper *h = c;
  if (!event_admitted(h)) return;
  cleanup_free char *fields = NULL;
  an_error_t e = NULL;
  if (an_egress_event_fields(ev, &fields, &e) == 0) an_sb_event(h->dir, "egress", "%s", fields);
  an_error_free(&e);
}

/* SIGHUP: the options record changed (egress_change.c): take its policy.
 * A record that does not parse keeps the old policy (the ruleset was
 * replaced already, so the stricter of the two applies meanwhile). */
static void reload(struct helper *h, struct an_proxy *px) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", h->dir, AN_SB_OPTIONS_FILE);
  struct an_sandbox_opts *o = NULL;
  struct an_egress_policy *p = NULL;
  an_error_t e = NULL;
  if (an_sandbox_opts_new(&o, &e) == 0 && an_sandbox_opts_load_profile(o, path, NULL, &e) == 0 &&
      an_sb_egress_policy(o, &p, &e) == 0 && an_egress_policy_load_host_addrs(p, &e) == 0) {
    an_egress_policy_free((struct an_egress_policy *) h->ctx.policy);
    h->ctx.policy = an_steal(&p);
    /* what the new policy refuses ends now, also over connections made before */
    an_proxy_recheck(px);
  }
  an_egress_policy_free(p);
  an_sandbox_opts_free(o);
  an_error_free(&e);
}

/* The signals the egress process takes on its signalfd (SIGUSR1: reload;
 * the others end it), blocked from the fork on. */
static void egress_signals(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGHUP);
  sigaddset(set, SIGUSR1);
}

_Noreturn static void helper_main(struct helper *h, struct an_dnsfilter *df, struct an_proxy *px) {
  close_inherited(h, -1);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2) close(null);
  }
  if (chdir("/") < 0) {}
  /* Every fd number below FD_SETSIZE, and none above: libnftables (1.0.x,
   * used for each DNS answer admitted) waits on its netlink socket with
   * select(2), and an fd number >= FD_SETSIZE there aborts the process
   * (_FORTIFY_SOURCE's __fdelt_chk) -- a sandbox holding ~170 connections
   * through the proxy killed its egress process so on a host whose soft
   * limit is higher.  The proxy's and the filter's caps fit below it. */
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != EGRESS_NOFILE) {
    nofile.rlim_cur = nofile.rlim_max < EGRESS_NOFILE ? nofile.rlim_max : EGRESS_NOFILE;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  egress_signals(&set);
  sigprocmask(SIG_BLOCK, &set, NULL);   /* blocked since the fork already */
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0) _exit(1);
  struct pollfd p[3] = {{.fd = an_dnsfilter_fd(df), .events = POLLIN},
                        {.fd = an_proxy_fd(px), .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
  for (;;) {
    if (poll(p, 3, -1) < 0) continue;
    if (p[2].revents) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == (ssize_t) sizeof si && si.ssi_signo == SIGUSR1) reload(h, px);
      else _exit(0);
    }
    an_error_t e = NULL;
    if (p[0].revents && an_dnsfilter_dispatch(df, &e) < 0) _exit(1);
    if (p[1].revents && an_proxy_dispatch(px, &e) < 0) _exit(1);
  }
}

/* What can be made before the spec exists runs in a PREP THREAD while
 * an_sb_create goes on (records, id range, workspace, spec): the host's
 * addresses for the deny set, the netns with its veth pair, the ruleset,
 * the listeners, the filter, the proxy and the egress process itself.
 * Nothing reaches the sandbox before an_sb_egress_start joins the thread
 * and names the netns in the spec (fail closed: a failed step refuses the
 * create, and what it made is removed).
 *
 * The thread unshares its fd table (CLONE_FILES) first, and
 * an_sb_egress_prepare returns only after that: what it opens
 * (listeners, netlink and nft sockets, the filter's and proxy's fds) is
 * not in the creator's table, what the creator opens meanwhile (workspace,
 * lock, record fds) is not in the thread's, so the egress process, forked
 * from the thread, gets exactly the creator's fds of that moment (closed at
 * its start, as listed then) and its own; the thread's table goes when it
 * ends.  It goes back to the host netns before the filter, the proxy and
 * the fork: the egress process's upstream sockets are the host's.
 *
 * The fork waits for the creator: the thread makes everything up to it
 * while the creator builds the spec, then blocks until an_sb_egress_start
 * (or an_sb_egress_prep_free, which cancels it) lets it go while the
 * creator itself waits in pthread_join.  A fork while another thread runs
 * gives the child whatever locks that thread held at that instant; glibc's
 * malloc survives it, GCC 12's ASan allocator did not (an egress process
 * hung in malloc, and with it every DNS query of the sandbox: a CI run's
 * net_sandbox test waited on nc until its timeout), and the egress process
 * calls far more than async-signal-safe functions.
 *
 * The caller does not wait for the egress process to run: its sockets are
 * bound and listening already (the kernel queues what the sandbox sends
 * until the loop takes it).  Its signals are blocked from the fork on (the
 * thread's mask), so a SIGUSR1 (reload) or SIGTERM sent before it reaches
 * its loop waits on its signalfd instead of taking the default action. */
enum fork_gate { GATE_WAIT, GATE_GO, GATE_CANCEL };

struct an_sb_egress_prep {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  enum fork_gate gate;       /* under lock: the creator's word on the fork */
  bool unshared;             /* under lock: the thread has its own fd table */
  bool running, handed, helper;
  struct an_egress_policy *p;
  struct helper h;
  int r;
  an_error_t err;
  char dir[4096], ns[4096];
};

/* the thread: wait for the creator's word (it then waits in pthread_join) */
static int gate_wait(struct an_sb_egress_prep *ep, an_error_t *err) {
  pthread_mutex_lock(&ep->lock);
  while (ep->gate == GATE_WAIT) pthread_cond_wait(&ep->cond, &ep->lock);
  enum fork_gate g = ep->gate;
  pthread_mutex_unlock(&ep->lock);
  return g == GATE_GO ? 0 : an_error_set(err, ECANCELED, "egress: the sandbox's creation was abandoned");
}

/* the creator: let the thread go on (GATE_GO) or end (GATE_CANCEL) */
static void gate_open(struct an_sb_egress_prep *ep, enum fork_gate g) {
  pthread_mutex_lock(&ep->lock);
  if (ep->gate == GATE_WAIT) ep->gate = g;
  pthread_cond_broadcast(&ep->cond);
  pthread_mutex_unlock(&ep->lock);
}

/* the thread has its own fd table (or failed to make one): the creator may
 * go on opening fds, none of which the thread then holds */
static void unshared_tell(struct an_sb_egress_prep *ep) {
  pthread_mutex_lock(&ep->lock);
  ep->unshared = true;
  pthread_cond_broadcast(&ep->cond);
  pthread_mutex_unlock(&ep->lock);
}

static void unshared_wait(struct an_sb_egress_prep *ep) {
  pthread_mutex_lock(&ep->lock);
  while (!ep->unshared) pthread_cond_wait(&ep->cond, &ep->lock);
  pthread_mutex_unlock(&ep->lock);
}

static int fork_helper(struct an_sb_egress_prep *ep, struct an_dnsfilter *df, struct an_proxy *px,
                       an_error_t *err) {
  if (gate_wait(ep, err) < 0) return -ECANCELED;
  pid_t pid = 0;
  int f = an_sb_fork_detached_pid("egress", &pid, err);
  if (f == 0) helper_main(&ep->h, df, px);
  if (f < 0) return an_error_prefix(err, "sandbox %s", ep->dir);
  ep->helper = true;
  uint64_t start = 0;
  an_error_t e = NULL;
  an_process_start_time(pid, &start, &e);
  an_error_free(&e);
  char text[64];
  snprintf(text, sizeof text, "%d %llu\n", (int) pid, (unsigned long long) start);
  int r = write_file(ep->dir, PID_FILE, text, err);
  if (r < 0) kill(pid, SIGKILL);   /* teardown could not find it: now, while the pid is surely its */
  return r;
}

/* in the host netns again: the filter and the proxy on the listeners,
 * then the egress process */
static int prep_egress_process(struct an_sb_egress_prep *ep, struct listeners *l, an_error_t *err) {
  struct an_egress_policy *p = ep->p;
  struct helper *h = &ep->h;
  struct an_dnsfilter *df = NULL;
  struct an_proxy *px = NULL;
  h->dir = ep->dir;
  h->ctx = (struct an_egress_ctx){.policy = p, .netns_path = ep->ns, .sink = sink, .sink_ctx = h};
  struct an_net_hooks hooks;
  an_egress_hooks(&h->ctx, &hooks);
  struct sockaddr_storage ups[AN_EGRESS_MAX_UPSTREAMS];
  for (size_t i = 0; i < p->n_upstreams; i++) ups[i] = p->upstreams[i].sa;
  struct an_dnsfilter_config dc = {.udp_fd = l->dns_udp, .tcp_fd = l->dns_tcp,
                                   .upstreams = p->n_upstreams ? ups : NULL, .n_upstreams = p->n_upstreams,
                                   .limits = {.ttl_cap_s = 300}};
  l->dns_udp = l->dns_tcp = -1;   /* the filter owns them, also on failure */
  int r = an_dnsfilter_new(&dc, &hooks, &df, err);
  /* helper_main ignores SIGPIPE */
  struct an_proxy_config pc = {.listen_fd4 = l->proxy4, .listen_fd6 = l->proxy6, .sigpipe_ignored = true,
                               .limits = {.max_conns = EGRESS_PROXY_CONNS}};
  l->proxy4 = l->proxy6 = -1;
  if (r >= 0) r = an_proxy_new(&pc, &hooks, &px, err);
  else {
    if (pc.listen_fd4 >= 0) close(pc.listen_fd4);
    if (pc.listen_fd6 >= 0) close(pc.listen_fd6);
  }
  if (r >= 0) r = fork_helper(ep, df, px, err);
  /* the egress process has its own copies of everything */
  an_proxy_free(px);
  an_dnsfilter_free(df);
  return r;
}

static void *prep_main(void *arg) {
  struct an_sb_egress_prep *ep = arg;
  an_error_t *err = &ep->err;
  struct listeners l = {-1, -1, -1, -1};
  sigset_t set;
  egress_signals(&set);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  int r = unshare(CLONE_FILES) < 0 ? an_error_set(err, errno, "egress: unshare(CLONE_FILES)") : 0;
  if (r >= 0) note_open_fds(&ep->h);
  unshared_tell(ep);
  int host = r < 0 ? -1 : open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (r >= 0 && host < 0) r = an_error_set(err, errno, "egress: open this thread's netns");
  if (r >= 0) r = an_egress_policy_load_host_addrs(ep->p, err);
  int fd = r < 0 ? -1 : open(ep->ns, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (r >= 0 && fd < 0) r = an_error_set(err, errno, "netns %s: create the mount point", ep->ns);
  if (fd >= 0) close(fd);
  if (r >= 0) r = an_netns_enter_new(ep->ns, err);
  if (r >= 0) r = an_ruleset_load_here(ep->p, AN_SB_EGRESS_PROXY_PORT, err);
  if (r >= 0) r = make_listeners(&l, err);
  if (r >= 0 && setns(host, CLONE_NEWNET) < 0) r = an_error_set(err, errno, "egress: back to the host netns");
  if (host >= 0) close(host);
  if (r >= 0) r = prep_egress_process(ep, &l, err);
  close_listeners(&l);
  ep->r = r;
  return NULL;   /* this thread's fd table, and every fd in it, goes with it */
}

static int prep_join(struct an_sb_egress_prep *ep, enum fork_gate g) {
  if (ep->running) {
    gate_open(ep, g);
    pthread_join(ep->thread, NULL);
    ep->running = false;
  }
  return ep->r;
}

int an_sb_egress_prepare(const char *dir, const struct an_sandbox_opts *opts, struct an_sb_egress_prep **out,
                         an_error_t *err) {
  *out = NULL;
  struct an_egress_policy *p = NULL;
  int r = an_sb_egress_policy(opts, &p, err);
  if (r < 0) return an_error_prefix(err, "network %s", an_sandbox_opts_network(opts));
  if (p->mode == AN_EGRESS_NONE) {
    an_egress_policy_free(p);
    return 0;
  }
  struct an_sb_egress_prep *ep = calloc(1, sizeof *ep);
  if (!ep) {
    an_egress_policy_free(p);
    return an_error_set(err, ENOMEM, "network %s", an_sandbox_opts_network(opts));
  }
  ep->p = p;
  pthread_mutex_init(&ep->lock, NULL);
  pthread_cond_init(&ep->cond, NULL);
  snprintf(ep->dir, sizeof ep->dir, "%s", dir);
  snprintf(ep->ns, sizeof ep->ns, "%s/%s", dir, NETNS_FILE);
  int e = pthread_create(&ep->thread, NULL, prep_main, ep);
  if (e) {
    an_sb_egress_prep_free(ep);
    return an_error_set(err, e, "network %s: start a thread", an_sandbox_opts_network(opts));
  }
  ep->running = true;
  /* wait for the thread's unshare(CLONE_FILES): a copy of the fd table made
   * later would hold the creator's newer fds (the write end of mke2fs's
   * pipe: the creator waited for its EOF, the thread for the creator's
   * word on the fork, for ever) */
  unshared_wait(ep);
  *out = ep;
  return 0;
}

void an_sb_egress_prep_free(struct an_sb_egress_prep *ep) {
  if (!ep) return;
  prep_join(ep, GATE_CANCEL);
  if (!ep->handed) {
    /* not the sandbox's (yet): its process and netns go now */
    an_error_t e = NULL;
    an_sb_egress_stop(ep->dir, &e);
    an_error_free(&e);
  }
  an_error_free(&ep->err);
  an_egress_policy_free(ep->p);
  pthread_cond_destroy(&ep->cond);
  pthread_mutex_destroy(&ep->lock);
  free(ep);
}

int an_sb_egress_start(struct an_sandbox *sb, struct an_sb_egress_prep *ep, const char *rootfs,
                       struct an_spec *spec, an_error_t *err) {
  if (!ep) return 0;   /* mode none */
  int r = prep_join(ep, GATE_GO);
  if (r < 0 && err && !*err) *err = an_steal(&ep->err);
  if (r >= 0 && (r = dns_files(sb->dir, rootfs, spec, err)) >= 0 && (r = set_netns_path(spec, ep->ns, err)) >= 0) {
    ep->handed = true;   /* the sandbox's now: teardown removes it */
    an_sb_event(sb->dir, "egress_started", ",\"mode\":\"%s\",\"entries\":%zu",
                an_egress_mode_name(ep->p->mode), ep->p->n_entries);
  }
  return r < 0 ? an_error_prefix(err, "network %s", an_egress_mode_name(ep->p->mode)) : 0;
}

/* a pidfd of the sandbox's egress process (checked against its start
 * time, so a reused pid is never signalled), or -1 */
static int egress_pidfd(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, PID_FILE);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  int pid = 0, fd = -1;
  unsigned long long start = 0;
  if (fscanf(f, "%d %llu", &pid, &start) == 2 && pid > 0) {
    an_error_t e = NULL;
    if (an_process_pidfd_checked(pid, start, &fd, &e) < 0) fd = -1;
    an_error_free(&e);
  }
  fclose(f);
  return fd;
}

/* signal the egress process of sandbox dir, if it runs (best effort) */
static void egress_signal(const char *dir, int sig) {
  int fd = egress_pidfd(dir);
  if (fd < 0) return;
  an_error_t e = NULL;
  an_process_signal(fd, sig, &e);
  an_error_free(&e);
  close(fd);
}

void an_sb_egress_reload(const char *dir) { egress_signal(dir, SIGUSR1); }

void an_sb_egress_kill(const char *dir) { egress_signal(dir, SIGKILL); }

int an_sb_egress_stop(const char *dir, an_error_t *err) {
  int fd = egress_pidfd(dir);
  if (fd >= 0) {
    an_error_t e = NULL;
    an_process_signal(fd, SIGKILL, &e);
    an_error_free(&e);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    while (poll(&pfd, 1, 5000) < 0 && errno == EINTR) {}
    close(fd);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, NETNS_FILE);
  return an_netns_remove(path, err);
}
