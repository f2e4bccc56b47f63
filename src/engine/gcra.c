/* GCRA rate buckets (engine/gcra.h). */
#include "engine/gcra.h"

void rb_gcra_init(rb_gcra *g, int64_t rate, int64_t period_ms, int64_t burst)
{
    if (rate <= 0) {
        g->t_us = g->tau_us = 0;
        return;
    }
    int64_t period_us = period_ms * 1000;
    g->t_us = (period_us + rate - 1) / rate; /* rounded up: the bound holds */
    if (g->t_us < 1)
        g->t_us = 1;
    g->tau_us = burst > 0 ? burst * g->t_us : 0;
}

bool rb_gcra_conforms(const rb_gcra *g, int64_t tat_us, int64_t now_us)
{
    return !g->t_us || now_us >= rb_gcra_next_us(g, tat_us);
}

int64_t rb_gcra_start(const rb_gcra *g, int64_t tat_us, int64_t now_us)
{
    if (!g->t_us)
        return tat_us;
    int64_t base = tat_us > now_us ? tat_us : now_us;
    return base > INT64_MAX - g->t_us ? INT64_MAX : base + g->t_us;
}

int64_t rb_gcra_next_us(const rb_gcra *g, int64_t tat_us)
{
    return g->t_us ? tat_us - g->tau_us : INT64_MIN;
}

int64_t rb_gcra_available(const rb_gcra *g, int64_t tat_us, int64_t now_us)
{
    if (!g->t_us)
        return INT64_MAX;
    if (now_us < tat_us - g->tau_us)
        return 0;
    int64_t base = tat_us > now_us ? tat_us : now_us;
    return (now_us + g->tau_us - base) / g->t_us + 1;
}
