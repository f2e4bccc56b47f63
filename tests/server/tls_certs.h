/* Throwaway certificates for the TLS and HTTPS tests (test_tls.c,
 * test_https.c): self-signed EC ones made by the `openssl` command line in
 * a test's own directory. Header-only. */
#ifndef RB_TESTS_SERVER_TLS_CERTS_H
#define RB_TESTS_SERVER_TLS_CERTS_H

#include <stdio.h>
#include <stdlib.h>

/* Makes a self-signed certificate for the given subjectAltName ("IP:127.0.0.1,
 * DNS:localhost") as dir/NAME.pem with its key dir/NAME.key; both paths are
 * written to cert_out and key_out (400 bytes each). Returns 0, or -1 when
 * openssl failed. */
static inline int rbh_make_cert(const char *dir, const char *name, const char *san,
                                char *cert_out, char *key_out)
{
    snprintf(cert_out, 400, "%s/%s.pem", dir, name);
    snprintf(key_out, 400, "%s/%s.key", dir, name);
    char cmd[1400];
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
             " -keyout '%s' -out '%s' -days 1 -subj /CN=rebound-test -addext"
             " 'subjectAltName=%s' >/dev/null 2>&1",
             key_out, cert_out, san);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
