/* HELLO's password hashing (see auth.h), with OpenSSL's EVP digests. */
#include "server/auth.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/error.h"

int rb_srv_pwdhash(const char *password, const char *salt, long iterations, char out[65])
{
    if (iterations < 1)
        return RB_EINVAL;
    unsigned char h[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    EVP_DigestUpdate(ctx, password, strlen(password));
    EVP_DigestUpdate(ctx, salt, strlen(salt));
    EVP_DigestFinal_ex(ctx, h, &n);
    for (long i = 1; i < iterations; i++) {
        EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
        EVP_DigestUpdate(ctx, h, n);
        EVP_DigestFinal_ex(ctx, h, &n);
    }
    EVP_MD_CTX_free(ctx);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
    return 0;
}

bool rb_srv_auth_check(const char *password, const char *salt, long iterations, const char *given)
{
    char want[65];
    if (!given || rb_srv_pwdhash(password, salt, iterations, want))
        return false;
    char g[65] = {0};
    size_t len = strlen(given);
    memcpy(g, given, len < 64 ? len : 64);
    return (len == 64) & (CRYPTO_memcmp(g, want, 64) == 0);
}
