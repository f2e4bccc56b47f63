/* Unit tests for the client's pure parts: URL parsing, the default URL from the
 * environment, HELLO's password hash and job ids. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "rebound/client.h"

static rb_client_url parse_ok(const char *url)
{
    rb_client_url u;
    rb_err e = {0};
    int rc = rb_client_url_parse(url, &u, &e);
    cr_assert_eq(rc, 0, "%s: %s", url, rb_err_msg(&e));
    return u;
}

static void parse_bad(const char *url, const char *needle)
{
    rb_client_url u;
    rb_err e = {0};
    cr_assert_eq(rb_client_url_parse(url, &u, &e), RB_EINVAL, "%s parsed", url);
    cr_assert(strstr(e.msg, needle), "%s: message '%s' lacks '%s'", url, e.msg, needle);
}

Test(client_url, plain_tcp)
{
    rb_client_url u = parse_ok("tcp://127.0.0.1:7420");
    cr_assert_str_eq(u.host, "127.0.0.1");
    cr_assert_str_eq(u.port, "7420");
    cr_assert_str_eq(u.password, "");
}

Test(client_url, password_and_default_port)
{
    rb_client_url u = parse_ok("tcp://:s3cr:et@example.org");
    cr_assert_str_eq(u.host, "example.org");
    cr_assert_str_eq(u.port, "7419");
    cr_assert_str_eq(u.password, "s3cr:et");
    u = parse_ok("tcp://user:pw@localhost:1/");
    cr_assert_str_eq(u.password, "pw");
    cr_assert_str_eq(u.host, "localhost");
    cr_assert_str_eq(u.port, "1");
}

Test(client_url, ipv6_and_bare)
{
    rb_client_url u = parse_ok("tcp://[::1]:9000");
    cr_assert_str_eq(u.host, "::1");
    cr_assert_str_eq(u.port, "9000");
    u = parse_ok("[::1]");
    cr_assert_str_eq(u.port, "7419");
    u = parse_ok("db.local:65535");
    cr_assert_str_eq(u.host, "db.local");
    cr_assert_str_eq(u.port, "65535");
}

Test(client_url, tls_scheme)
{
    rb_client_url u = parse_ok("tcp+tls://:pw@secure.local:7500");
    cr_assert_eq(u.tls, 1);
    cr_assert_str_eq(u.host, "secure.local");
    cr_assert_str_eq(u.port, "7500");
    cr_assert_str_eq(u.password, "pw");
    u = parse_ok("tcp://h:1");
    cr_assert_eq(u.tls, 0);
}

Test(client_url, rejects)
{
    parse_bad("", "empty url");
    parse_bad("tls://h:1", "scheme");
    parse_bad("tcp+ssl://h:1", "scheme");
    parse_bad("http://h:1", "scheme");
    parse_bad("tcp://:7419", "no host");
    parse_bad("tcp://h:0", "port");
    parse_bad("tcp://h:65536", "port");
    parse_bad("tcp://h:12a", "port");
    parse_bad("tcp://h:", "port");
    parse_bad("tcp://[::1", "unclosed");
    parse_bad("tcp://h:1/path", "path");
}

Test(client_url, default_from_environment)
{
    unsetenv("FAKTORY_URL");
    unsetenv("FAKTORY_PROVIDER");
    unsetenv("REBOUND_URL");
    cr_assert_str_eq(rb_client_default_url(), "tcp://127.0.0.1:7419");
    setenv("REBOUND_URL", "tcp://r:1", 1);
    cr_assert_str_eq(rb_client_default_url(), "tcp://r:1");
    setenv("MY_URL", "tcp://p:2", 1);
    setenv("FAKTORY_PROVIDER", "MY_URL", 1);
    cr_assert_str_eq(rb_client_default_url(), "tcp://p:2");
    setenv("FAKTORY_URL", "tcp://f:3", 1);
    cr_assert_str_eq(rb_client_default_url(), "tcp://f:3");
    setenv("FAKTORY_URL", "", 1);
    cr_assert_str_eq(rb_client_default_url(), "tcp://p:2");
}

/* Expected values computed independently (Python's hashlib, same recipe). */
Test(client_auth, pwdhash_known_answers)
{
    char out[65];
    rb_client_pwdhash("", "", 1, out);
    cr_assert_str_eq(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    rb_client_pwdhash("secret", "abc123", 1, out);
    cr_assert_str_eq(out, "42416b7fc9a656af2a2e9d09157317bb2ccfdd4a3717d6847836e480f8418b48");
    rb_client_pwdhash("secret", "abc123", 4000, out);
    cr_assert_str_eq(out, "e5b99ef60d63e4f9c31e8187ee8434f17bb1cab581e109b70df79012514bb5b0");
    rb_client_pwdhash("pw", "f00d", 5111, out);
    cr_assert_str_eq(out, "065376d32de522794720f7878cfeb8ebebd8774bdbefb6ac58634981d6c49f7b");
}

Test(client_jid, random_hex_and_distinct)
{
    char a[25], b[25];
    rb_jid_new(a);
    rb_jid_new(b);
    cr_assert_eq(strlen(a), 24);
    cr_assert_eq(strspn(a, "0123456789abcdef"), 24, "jid '%s'", a);
    cr_assert_str_neq(a, b);
}
