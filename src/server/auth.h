/* Faktory's password check: pwdhash = hex(SHA-256 iterated `iterations`
 * times over password+salt), compared in constant time. */
#ifndef RB_SERVER_AUTH_H
#define RB_SERVER_AUTH_H

#include <stdbool.h>

/* Fills out (65 bytes) with the lowercase hex hash. Returns 0, or RB_EINVAL
 * when iterations < 1. */
int rb_srv_pwdhash(const char *password, const char *salt, long iterations, char out[65]);
/* True when given equals the expected hash; time independent of where they
 * differ. */
bool rb_srv_auth_check(const char *password, const char *salt, long iterations,
                       const char *given);

#endif
