/* The DDP workload's math: job defaults, the synthetic dataset, the MLP's
 * forward and backward passes, SGD with momentum and weight decay, and the
 * warm-up + cosine schedule (see include/ckh/ddp.h).
 *
 * Every float operation runs in a fixed order, so equal inputs give
 * bit-identical outputs on every rank and in every run.
 */
#include <math.h>
#include <string.h>

#include "ckh/ddp.h"
#include "ckh/err.h"

const char *const ckh_ddp_param_names[CKH_DDP_NPARAM] = {"fc1.weight", "fc1.bias", "fc2.weight",
                                                         "fc2.bias"};

void ckh_ddp_config_default(struct ckh_ddp_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->seed = 1;
    cfg->world = 2;
    cfg->samples = 64;
    cfg->in_dim = 8;
    cfg->hidden = 16;
    cfg->out_dim = 4;
    cfg->batch = 4;
    cfg->accum = 1;
    cfg->epochs = 3;
    cfg->lr = 0.05f;
    cfg->min_lr = 0.001f;
    cfg->warmup_steps = 4;
    cfg->momentum = 0.9f;
    cfg->weight_decay = 1e-4f;
    cfg->dropout = 0.25f;
    cfg->ckpt_every = 5;
    cfg->ckpt_epoch_end = true;
    cfg->ckpt_dir = "/ckpt";
    cfg->saver_name = "ddp";
    cfg->strategy = CKH_ADIR_SYNC_ANY;
    cfg->keep_last = 2;
    cfg->keymode = CKH_DDP_KEYS_STRICT;
}

uint64_t ckh_ddp_total_steps(const struct ckh_ddp_config *cfg)
{
    if (!cfg || cfg->world < 1 || !cfg->batch || !cfg->accum || !cfg->samples)
        return 0;
    uint64_t w = (uint64_t)cfg->world;
    uint64_t per_rank = cfg->drop_last ? cfg->samples / w : (cfg->samples + w - 1) / w;
    uint64_t per_step = (uint64_t)cfg->batch * cfg->accum;
    return (per_rank + per_step - 1) / per_step * (uint64_t)cfg->epochs;
}

float ckh_ddp_sched_lr(const struct ckh_ddp_sched *s)
{
    if (!s)
        return 0.0f;
    uint64_t step = s->last_step + 1;
    if (s->warmup_steps && step <= s->warmup_steps)
        return s->base_lr * (float)step / (float)s->warmup_steps;
    uint64_t span = s->total_steps > s->warmup_steps ? s->total_steps - s->warmup_steps : 1;
    double t = (double)(step - s->warmup_steps) / (double)span;
    if (t > 1.0)
        t = 1.0;
    double cosv = 0.5 * (1.0 + cos(3.14159265358979323846 * t));
    return (float)((double)s->min_lr + ((double)s->base_lr - (double)s->min_lr) * cosv);
}

uint64_t ckh_ddp_model_bytes(const struct ckh_ddp_model *m)
{
    uint64_t n = 0;
    for (int i = 0; m && i < CKH_DDP_NPARAM; i++)
        n += m->count[i] * sizeof(float);
    return n;
}

void ckh_ddp_model_fini(struct ckh_ddp_model *m)
{
    if (!m)
        return;
    for (int i = 0; i < CKH_DDP_NPARAM; i++) {
        ckh_free(m->alloc, m->param[i]);
        ckh_free(m->alloc, m->grad[i]);
        ckh_free(m->alloc, m->mom[i]);
        m->param[i] = m->grad[i] = m->mom[i] = NULL;
    }
    ckh_free(m->alloc, m->act);
    m->act = NULL;
}

int ckh_ddp_model_init(struct ckh_ddp_model *m, struct ckh_alloc *alloc,
                       const struct ckh_ddp_config *cfg, int device)
{
    if (!m || !cfg || !cfg->in_dim || !cfg->hidden || !cfg->out_dim || cfg->in_dim > 4096 ||
        cfg->hidden > 4096 || cfg->out_dim > 4096)
        return CKH_EINVAL;
    memset(m, 0, sizeof *m);
    m->alloc = alloc;
    m->in_dim = cfg->in_dim;
    m->hidden = cfg->hidden;
    m->out_dim = cfg->out_dim;
    m->count[0] = (uint64_t)cfg->hidden * cfg->in_dim;
    m->count[1] = cfg->hidden;
    m->count[2] = (uint64_t)cfg->out_dim * cfg->hidden;
    m->count[3] = cfg->out_dim;
    for (int i = 0; i < CKH_DDP_NPARAM; i++) {
        m->param[i] = ckh_calloc(alloc, m->count[i], sizeof(float));
        m->grad[i] = ckh_calloc(alloc, m->count[i], sizeof(float));
        m->mom[i] = ckh_calloc(alloc, m->count[i], sizeof(float));
        m->param_device[i] = device;
        m->mom_device[i] = device;
        if (!m->param[i] || !m->grad[i] || !m->mom[i]) {
            ckh_ddp_model_fini(m);
            return CKH_ENOMEM;
        }
    }
    /* hidden pre-activation, mask, delta; out delta */
    m->act = ckh_calloc(alloc, 3u * cfg->hidden + cfg->out_dim, sizeof(float));
    if (!m->act) {
        ckh_ddp_model_fini(m);
        return CKH_ENOMEM;
    }
    struct ckh_rng rng;
    ckh_rng_seed(&rng, ckh_seed_derive(cfg->seed, "ddp-init"));
    float s1 = 1.0f / sqrtf((float)cfg->in_dim), s2 = 1.0f / sqrtf((float)cfg->hidden);
    for (uint64_t k = 0; k < m->count[0]; k++)
        m->param[0][k] = (float)(ckh_rng_unit(&rng) * 2.0 - 1.0) * s1;
    for (uint64_t k = 0; k < m->count[2]; k++)
        m->param[2][k] = (float)(ckh_rng_unit(&rng) * 2.0 - 1.0) * s2;
    return 0;
}

void ckh_ddp_sample(const struct ckh_ddp_config *cfg, uint64_t index, float *x, float *y)
{
    struct ckh_rng rng;
    ckh_rng_seed(&rng, ckh_seed_derive(cfg->seed, "ddp-data") ^ ckh_mix64(index));
    for (uint32_t j = 0; j < cfg->in_dim; j++)
        x[j] = (float)(ckh_rng_unit(&rng) * 2.0 - 1.0);
    /* Teacher: y_o = tanh(sum_j t(o, j) x_j), t a fixed function of the seed. */
    uint64_t tseed = ckh_seed_derive(cfg->seed, "ddp-teacher");
    for (uint32_t o = 0; o < cfg->out_dim; o++) {
        float acc = 0.0f;
        for (uint32_t j = 0; j < cfg->in_dim; j++) {
            uint64_t h = ckh_mix64(tseed ^ ((uint64_t)o << 32 | j));
            float t = (float)((double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0);
            acc += t * x[j];
        }
        y[o] = tanhf(acc);
    }
}

void ckh_ddp_model_backward(struct ckh_ddp_model *m, const float *x, const float *y, float dropout,
                            struct ckh_rng *rng, float scale)
{
    uint32_t D = m->in_dim, H = m->hidden, O = m->out_dim;
    float *pre = m->act, *mask = m->act + H, *dh = m->act + 2 * H, *dout = m->act + 3 * H;
    const float *W1 = m->param[0], *b1 = m->param[1], *W2 = m->param[2], *b2 = m->param[3];
    float keep = 1.0f - dropout;
    for (uint32_t h = 0; h < H; h++) {
        float acc = b1[h];
        for (uint32_t j = 0; j < D; j++)
            acc += W1[(uint64_t)h * D + j] * x[j];
        pre[h] = acc;
        bool drop = dropout > 0.0f && ckh_rng_unit(rng) < (double)dropout;
        mask[h] = drop ? 0.0f : 1.0f / keep;
    }
    for (uint32_t o = 0; o < O; o++) {
        float acc = b2[o];
        for (uint32_t h = 0; h < H; h++)
            acc += W2[(uint64_t)o * H + h] * (pre[h] > 0.0f ? pre[h] * mask[h] : 0.0f);
        dout[o] = (acc - y[o]) * scale;
    }
    for (uint32_t h = 0; h < H; h++) {
        float a = pre[h] > 0.0f ? pre[h] * mask[h] : 0.0f;
        float back = 0.0f;
        for (uint32_t o = 0; o < O; o++) {
            m->grad[2][(uint64_t)o * H + h] += dout[o] * a;
            back += W2[(uint64_t)o * H + h] * dout[o];
        }
        dh[h] = pre[h] > 0.0f ? back * mask[h] : 0.0f;
    }
    for (uint32_t o = 0; o < O; o++)
        m->grad[3][o] += dout[o];
    for (uint32_t h = 0; h < H; h++) {
        for (uint32_t j = 0; j < D; j++)
            m->grad[0][(uint64_t)h * D + j] += dh[h] * x[j];
        m->grad[1][h] += dh[h];
    }
}

void ckh_ddp_sgd_step(struct ckh_ddp_model *m, float lr, float momentum, float weight_decay)
{
    for (int i = 0; i < CKH_DDP_NPARAM; i++) {
        for (uint64_t k = 0; k < m->count[i]; k++) {
            float g = m->grad[i][k] + weight_decay * m->param[i][k];
            m->mom[i][k] = momentum * m->mom[i][k] + g;
            m->param[i][k] -= lr * m->mom[i][k];
            m->grad[i][k] = 0.0f;
        }
    }
}

static uint64_t digest_arrays(float *const *a, const uint64_t *count, const int *dev)
{
    uint64_t h = CKH_HASH_INIT;
    for (int i = 0; i < CKH_DDP_NPARAM; i++) {
        int32_t d = dev[i];
        h = ckh_hash64(h, &d, sizeof d);
        h = ckh_hash64(h, a[i], count[i] * sizeof(float));
    }
    return h;
}

uint64_t ckh_ddp_model_digest(const struct ckh_ddp_model *m)
{
    return m ? digest_arrays(m->param, m->count, m->param_device) : 0;
}

uint64_t ckh_ddp_optim_digest(const struct ckh_ddp_model *m)
{
    return m ? digest_arrays(m->mom, m->count, m->mom_device) : 0;
}
