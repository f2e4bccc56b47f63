/* Writing JSON string literals straight into a request buffer, so that the
 * hot commands (ACK, FAIL, FETCH) need no jansson tree. */
#include "client/internal.h"

void rb__json_add_str(rb_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    rb_buf_addc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char ch = *p;
        switch (ch) {
        case '"': rb_buf_add(b, "\\\"", 2); break;
        case '\\': rb_buf_add(b, "\\\\", 2); break;
        case '\n': rb_buf_add(b, "\\n", 2); break;
        case '\r': rb_buf_add(b, "\\r", 2); break;
        case '\t': rb_buf_add(b, "\\t", 2); break;
        default:
            if (ch < 0x20) {
                char esc[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
                rb_buf_add(b, esc, sizeof esc);
            } else {
                rb_buf_addc(b, (char)ch);
            }
        }
    }
    rb_buf_addc(b, '"');
}
