/* Send / receive / rts loop over loopback between two RMR contexts in one process, for
 * valgrind (run by test-sanitizers.sh). Prototypes are declared here from the public API
 * so the program builds against any librmr_si.so. Exit status 0 only if every round trip
 * came back intact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    int state;
    int mtype;
    int len;
    unsigned char* payload;
    unsigned char* xaction;
    int sub_id;
    int tp_state;
} rmr_mbuf_t; /* public part only: buffers are always allocated by the library */

extern void* rmr_init(char* port, int max, int flags);
extern int rmr_ready(void* ctx);
extern void rmr_close(void* ctx);
extern rmr_mbuf_t* rmr_alloc_msg(void* ctx, int size);
extern rmr_mbuf_t* rmr_realloc_payload(rmr_mbuf_t* m, int len, int copy, int clone);
extern void rmr_free_msg(rmr_mbuf_t* m);
extern rmr_mbuf_t* rmr_send_msg(void* ctx, rmr_mbuf_t* m);
extern rmr_mbuf_t* rmr_rts_msg(void* ctx, rmr_mbuf_t* m);
extern rmr_mbuf_t* rmr_torcv_msg(void* ctx, rmr_mbuf_t* m, int ms);
extern int rmr_bytes2meid(rmr_mbuf_t* m, unsigned char* b, int len);
extern unsigned char* rmr_get_meid(rmr_mbuf_t* m, unsigned char* dest);
extern int rmr_wh_open(void* ctx, char* target);
extern rmr_mbuf_t* rmr_wh_send_msg(void* ctx, int whid, rmr_mbuf_t* m);
extern void rmr_wh_close(void* ctx, int whid);
extern char* rmr_get_consts(void);
extern void rmr_free_consts(char* p);

int main(int argc, char** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: leakloop PORT_A PORT_B ITERATIONS\n");
        return 2;
    }
    int n = atoi(argv[3]);
    void* a = rmr_init(argv[1], 4096, 0);
    void* b = rmr_init(argv[2], 4096, 0);
    if (!a || !b || !rmr_ready(a)) {
        fprintf(stderr, "init failed\n");
        return 1;
    }
    rmr_mbuf_t* rb = rmr_alloc_msg(b, 64);
    rmr_mbuf_t* ra = rmr_alloc_msg(a, 64);
    int ok = 0;
    for (int i = 0; i < n; i++) {
        rmr_mbuf_t* m = rmr_alloc_msg(a, 32);
        int len = snprintf((char*)m->payload, 32, "msg-%d", i);
        m->len = len;
        m->mtype = 1;
        m->sub_id = i;
        memset(m->xaction, 'x', 32);
        rmr_bytes2meid(m, (unsigned char*)"gnb", 3);
        for (int t = 0; t < 1000; t++) {
            m = rmr_send_msg(a, m);
            if (m->state == 0) break;
            usleep(1000);
        }
        rmr_free_msg(m);
        rb = rmr_torcv_msg(b, rb, 5000);
        if (rb->state != 0) { fprintf(stderr, "b: no message at %d\n", i); break; }
        unsigned char* meid = rmr_get_meid(rb, NULL); /* malloc'd copy */
        int meid_ok = strcmp((char*)meid, "gnb") == 0;
        free(meid);
        rb = rmr_realloc_payload(rb, 128, 1, 0);
        rmr_mbuf_t* c = rmr_realloc_payload(rb, 256, 1, 1); /* a clone, freed below */
        rmr_free_msg(c);
        rb->mtype = 2;
        rb = rmr_rts_msg(b, rb);
        if (rb->state != 0) { fprintf(stderr, "rts failed at %d\n", i); break; }
        ra = rmr_torcv_msg(a, ra, 5000);
        if (ra->state != 0 || ra->mtype != 2 || ra->sub_id != i || !meid_ok) {
            fprintf(stderr, "bad reply at %d\n", i);
            break;
        }
        ok++;
    }
    int wh = rmr_wh_open(a, "127.0.0.1:1"); /* nothing listens: must fail cleanly */
    if (wh >= 0) rmr_wh_close(a, wh);
    char* consts = rmr_get_consts();
    rmr_free_consts(consts);
    rmr_free_msg(ra);
    rmr_free_msg(rb);
    rmr_close(a);
    rmr_close(b);
    printf("%d of %d round trips\n", ok, n);
    return ok == n ? 0 : 1;
}
