/* The two bits of randomness and hashing a client needs: HELLO's password
 * hash (iterated SHA-256) and fresh job ids. */
#include "client/internal.h"

#include "common/timeutil.h"

#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

#include <openssl/evp.h>

void rb_client_pwdhash(const char *password, const char *salt, long iterations, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE] = {0};
    unsigned int mdlen = 32;
    rb_buf first = RB_BUF_INIT;
    rb_buf_adds(&first, password);
    rb_buf_adds(&first, salt);
    /* EVP_Digest only fails when OpenSSL cannot allocate: the hash is then
     * wrong and the server refuses it, which is reported as such. */
    EVP_Digest(first.data, first.len, md, &mdlen, EVP_sha256(), NULL);
    rb_buf_release(&first);
    for (long i = 1; i < iterations; i++) {
        unsigned char prev[32];
        memcpy(prev, md, sizeof prev);
        EVP_Digest(prev, sizeof prev, md, &mdlen, EVP_sha256(), NULL);
    }
    for (unsigned int i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}

void rb_jid_new(char out[25])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char bytes[12];
    size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            /* No entropy source at all: fall back to the clock and a counter,
             * still unique within this process. */
            static unsigned counter;
            unsigned long long t = (unsigned long long)rb_now_ms();
            snprintf(out, 25, "%012llx%04x%08x", t & 0xffffffffffffULL,
                     (unsigned)getpid() & 0xffff, ++counter);
            return;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof bytes; i++) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 15];
    }
    out[24] = '\0';
}
