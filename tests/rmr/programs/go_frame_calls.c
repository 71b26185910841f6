/*
 * The RMR calls the Go xapp-frame and C/C++ xApps make, against any librmr_si.so given by
 * path (octoric's or O-RAN SC's RMR 4.9): an epoll loop on rmr_get_rcvfd, traced messages,
 * string transaction IDs and payloads, return-to-sender, rmr_rcv_specific setting other
 * replies aside, rx debug counters, low-latency and fast-ack modes.
 *
 * usage: go_frame_calls LIB RX_PORT TX_PORT   (routes: RMR_SEED_RT, mtype 100 -> RX_PORT)
 * Prints "ok" and exits 0, or names the first failed check and exits 1.
 *
 * The prototypes and the message struct below are written from RMR's documented C API
 * (its public ABI), so one binary runs against either library.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

typedef struct {
	int state;
	int mtype;
	int len;
	unsigned char *payload;
	unsigned char *xaction;
	int sub_id;
	int tp_state;
} msg_t; /* the leading, public fields of rmr_mbuf_t */

typedef struct {
	uint64_t drop;
	uint64_t enqueue;
} rx_debug_t;

static void *(*p_init)(char *, int, int);
static int (*p_ready)(void *);
static void (*p_close)(void *);
static void (*p_low_latency)(void *);
static void (*p_fack)(void *);
static int (*p_get_rcvfd)(void *);
static int (*p_set_stimeout)(void *, int);
static int (*p_set_rtimeout)(void *, int);
static msg_t *(*p_tralloc)(void *, int, int, const unsigned char *);
static msg_t *(*p_alloc)(void *, int);
static void (*p_free)(msg_t *);
static msg_t *(*p_send)(void *, msg_t *);
static msg_t *(*p_rts)(void *, msg_t *);
static msg_t *(*p_torcv)(void *, msg_t *, int);
static msg_t *(*p_rcv)(void *, msg_t *);
static msg_t *(*p_rcv_specific)(void *, msg_t *, char *, int);
static void (*p_str2payload)(msg_t *, const unsigned char *);
static int (*p_str2xact)(msg_t *, const unsigned char *);
static unsigned char *(*p_get_xact)(msg_t *, unsigned char *);
static int (*p_bytes2meid)(msg_t *, const unsigned char *, int);
static unsigned char *(*p_get_meid)(msg_t *, unsigned char *);
static int (*p_get_trlen)(msg_t *);
static int (*p_get_trace)(msg_t *, unsigned char *, int);
static int (*p_set_trace)(msg_t *, const unsigned char *, int);
static void *(*p_trace_ref)(msg_t *, int *);
static msg_t *(*p_realloc_msg)(msg_t *, int);
static int (*p_rx_debug)(void *, rx_debug_t *);
static int (*p_rx_debug_reset)(void *);

#define CHECK(cond, what)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("failed: %s (line %d)\n", what, __LINE__);      \
			exit(1);                                               \
		}                                                              \
	} while (0)

static void *need(void *h, const char *name) {
	void *p = dlsym(h, name);
	if (p == NULL) {
		printf("failed: the library has no %s\n", name);
		exit(1);
	}
	return p;
}

#define BIND(var, name) *(void **)(&var) = need(h, name)

static void bind_all(const char *lib) {
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		printf("failed: dlopen %s: %s\n", lib, dlerror());
		exit(1);
	}
	BIND(p_init, "rmr_init");
	BIND(p_ready, "rmr_ready");
	BIND(p_close, "rmr_close");
	BIND(p_low_latency, "rmr_set_low_latency");
	BIND(p_fack, "rmr_set_fack");
	BIND(p_get_rcvfd, "rmr_get_rcvfd");
	BIND(p_set_stimeout, "rmr_set_stimeout");
	BIND(p_set_rtimeout, "rmr_set_rtimeout");
	BIND(p_tralloc, "rmr_tralloc_msg");
	BIND(p_alloc, "rmr_alloc_msg");
	BIND(p_free, "rmr_free_msg");
	BIND(p_send, "rmr_send_msg");
	BIND(p_rts, "rmr_rts_msg");
	BIND(p_torcv, "rmr_torcv_msg");
	BIND(p_rcv, "rmr_rcv_msg");
	BIND(p_rcv_specific, "rmr_rcv_specific");
	BIND(p_str2payload, "rmr_str2payload");
	BIND(p_str2xact, "rmr_str2xact");
	BIND(p_get_xact, "rmr_get_xact");
	BIND(p_bytes2meid, "rmr_bytes2meid");
	BIND(p_get_meid, "rmr_get_meid");
	BIND(p_get_trlen, "rmr_get_trlen");
	BIND(p_get_trace, "rmr_get_trace");
	BIND(p_set_trace, "rmr_set_trace");
	BIND(p_trace_ref, "rmr_trace_ref");
	BIND(p_realloc_msg, "rmr_realloc_msg");
	BIND(p_rx_debug, "rmr_get_rx_debug_info");
	BIND(p_rx_debug_reset, "rmr_reset_rx_debug_count");
}

/* the Go frame's receive loop: wait on the descriptor, then rmr_rcv_msg (which must not
 * block once the descriptor said a message waits) */
static msg_t *poll_receive(void *ctx, int ep) {
	struct epoll_event ev;
	int n = epoll_wait(ep, &ev, 1, 5000);
	CHECK(n == 1, "rmr_get_rcvfd polls readable when a message waits");
	msg_t *m = p_rcv(ctx, NULL);
	CHECK(m != NULL && m->state == 0, "a message is there once the descriptor says so");
	return m;
}

static void send_one(void *tx, const char *xact, const char *body) {
	const unsigned char trace[8] = {'t', 'r', 'a', 'c', 'e', 'd', 'a', 't'};
	msg_t *m = p_tralloc(tx, 256, 8, trace);
	CHECK(m != NULL && m->state == 0 && p_get_trlen(m) == 8, "rmr_tralloc_msg");
	m->mtype = 100;
	m->sub_id = 7;
	p_str2payload(m, (const unsigned char *)body);
	CHECK(m->len == (int)strlen(body) + 1, "rmr_str2payload counts the NUL");
	CHECK(p_str2xact(m, (const unsigned char *)xact) == 0, "rmr_str2xact");
	p_bytes2meid(m, (const unsigned char *)"gnb_001", 8);
	for (int i = 0; i < 200; i++) {
		m = p_send(tx, m);
		if (m->state == 0) {
			break;
		}
		usleep(10000); /* the connection is being set up */
	}
	CHECK(m->state == 0, "rmr_send_msg");
	p_free(m);
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: go_frame_calls LIB RX_PORT TX_PORT\n");
		return 2;
	}
	bind_all(argv[1]);
	void *rx = p_init(argv[2], 4096, 0);
	void *tx = p_init(argv[3], 4096, 0);
	CHECK(rx != NULL && tx != NULL, "rmr_init");
	p_low_latency(rx);
	p_low_latency(tx);
	p_fack(rx);
	p_fack(tx);
	p_set_stimeout(tx, 1);
	CHECK(p_set_rtimeout(rx, 100) == 0, "rmr_set_rtimeout is a no-op on SI");
	for (int i = 0; i < 500 && !p_ready(tx); i++) {
		usleep(10000);
	}
	CHECK(p_ready(tx), "rmr_ready");

	int fd = p_get_rcvfd(rx);
	CHECK(fd >= 0, "rmr_get_rcvfd gives a descriptor");
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN};
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll on the descriptor");
	p_rx_debug_reset(rx);

	send_one(tx, "other", "first");
	send_one(tx, "xact-1", "hello");
	msg_t *a = poll_receive(rx, ep);
	msg_t *b = poll_receive(rx, ep);
	CHECK(epoll_wait(ep, &ev, 1, 0) == 0, "the descriptor is quiet once the queue is empty");

	unsigned char xid[32];
	CHECK(p_get_xact(b, xid) == xid && strcmp((char *)xid, "xact-1") == 0, "rmr_get_xact");
	unsigned char *own = p_get_xact(b, NULL);
	CHECK(own != NULL && memcmp(own, xid, 32) == 0, "rmr_get_xact allocates");
	free(own);
	CHECK(b->len == 6 && strcmp((char *)b->payload, "hello") == 0, "payload");
	unsigned char meid[33] = {0};
	CHECK(p_get_meid(b, meid) != NULL && strcmp((char *)meid, "gnb_001") == 0, "meid");
	unsigned char tr[16] = {0};
	CHECK(p_get_trlen(b) == 8, "the trace area travels");
	CHECK(p_get_trace(b, tr, sizeof tr) == 8 && memcmp(tr, "tracedat", 8) == 0, "trace data");
	int trn = 0;
	void *ref = p_trace_ref(b, &trn);
	CHECK(ref != NULL && trn == 8 && memcmp(ref, "tracedat", 8) == 0, "rmr_trace_ref");
	CHECK(p_set_trace(b, (const unsigned char *)"0123456789AB", 12) == 12, "rmr_set_trace");
	CHECK(p_get_trlen(b) == 12 && strcmp((char *)b->payload, "hello") == 0,
	      "a trace of another size keeps the payload");

	rx_debug_t dbg = {0, 0};
	CHECK(p_rx_debug(rx, &dbg) == 0 && dbg.enqueue == 2 && dbg.drop == 0,
	      "rmr_get_rx_debug_info counts what was queued");
	CHECK(p_rx_debug_reset(rx) == 0 && p_rx_debug(rx, &dbg) == 0 && dbg.enqueue == 0,
	      "rmr_reset_rx_debug_count");

	/* both back to the sender, the decoy first */
	a->mtype = 101;
	a = p_rts(rx, a);
	CHECK(a->state == 0, "rmr_rts_msg");
	b->mtype = 101;
	b = p_rts(rx, b);
	CHECK(b->state == 0, "rmr_rts_msg");

	msg_t *got = p_rcv_specific(tx, NULL, "xact-1", 5);
	CHECK(got != NULL && got->state == 0 && strcmp((char *)got->payload, "hello") == 0,
	      "rmr_rcv_specific returns the expected reply");
	CHECK(got->mtype == 101, "the reply's type");
	/* the reply it set aside comes first on a later receive. RMR 4.9 queues it without
	 * waking its receive calls, so it shows once the next message arrives: a third one */
	send_one(tx, "third", "third");
	msg_t *c = poll_receive(rx, ep);
	c = p_rts(rx, c);
	CHECK(c->state == 0, "rmr_rts_msg");
	msg_t *aside = p_torcv(tx, NULL, 2000);
	CHECK(aside != NULL && aside->state == 0 && strcmp((char *)aside->payload, "first") == 0,
	      "rmr_rcv_specific set the other reply aside for a later receive");

	msg_t *bigger = p_realloc_msg(got, 16);
	CHECK(bigger != NULL && p_get_trlen(bigger) == 16 && bigger->len == got->len &&
	          memcmp(bigger->payload, got->payload, got->len) == 0 && bigger->mtype == 101,
	      "rmr_realloc_msg: another trace size, the same payload");
	p_free(bigger);
	p_free(got);
	p_free(aside);
	p_free(a);
	p_free(b);
	p_free(c);
	p_close(tx);
	p_close(rx);
	printf("ok\n");
	return 0;
}
