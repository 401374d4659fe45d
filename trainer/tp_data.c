/* tp_data: synthetic seven-segment digits (see tp_data.h). */
#include "tp_data.h"

#include <math.h>
#include <string.h>

/* Segments a..g of a seven-segment digit, endpoints in a 1 x 2 box. */
static const float seg_xy[7][4] = {
    {0, 0, 1, 0}, /* a top */
    {1, 0, 1, 1}, /* b upper right */
    {1, 1, 1, 2}, /* c lower right */
    {0, 2, 1, 2}, /* d bottom */
    {0, 1, 0, 2}, /* e lower left */
    {0, 0, 0, 1}, /* f upper left */
    {0, 1, 1, 1}, /* g middle */
};
/* Bit j set: segment j is lit. */
static const uint8_t digit_segs[10] = {0x3f, 0x06, 0x5b, 0x4f, 0x66, 0x6d, 0x7d, 0x07, 0x7f, 0x6f};

typedef struct {
    uint64_t s;
} rng;

static uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static rng rng_for(uint64_t seed, uint64_t index, uint64_t stream) {
    return (rng){mix64(seed ^ mix64(index ^ mix64(stream)))};
}

static float uniform(rng *r) { /* [0, 1) */
    r->s = mix64(r->s);
    return (float)(r->s >> 40) * (1.0f / 16777216.0f);
}

static float range_f(rng *r, float lo, float hi) {
    return lo + (hi - lo) * uniform(r);
}

static float gauss(rng *r) {
    float u1 = uniform(r) + 1e-7f, u2 = uniform(r);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

static float seg_dist(float px, float py, float x0, float y0, float x1, float y1) {
    float dx = x1 - x0, dy = y1 - y0;
    float t = ((px - x0) * dx + (py - y0) * dy) / (dx * dx + dy * dy);
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    float ex = px - (x0 + t * dx), ey = py - (y0 + t * dy);
    return sqrtf(ex * ex + ey * ey);
}

int32_t tp_data_sample(uint64_t seed, uint64_t index, float *img) {
    rng r = rng_for(seed, index, 1);
    int32_t label = (int32_t)(mix64(seed * 31 + index) % TP_DATA_CLASSES);
    float w = range_f(&r, 8.0f, 12.0f), h = range_f(&r, 7.0f, 10.0f); /* h: half height */
    float cx = range_f(&r, 11.0f, 17.0f), cy = range_f(&r, 11.5f, 16.5f);
    float slant = range_f(&r, -0.25f, 0.25f), thick = range_f(&r, 1.0f, 1.8f);
    float ink = range_f(&r, 0.7f, 1.0f);
    float sx[7][4];
    for (int s = 0; s < 7; s++)
        for (int e = 0; e < 2; e++) {
            float ux = seg_xy[s][2 * e], uy = seg_xy[s][2 * e + 1];
            float y = cy + (uy - 1.0f) * h;
            sx[s][2 * e] = cx + (ux - 0.5f) * w - slant * (uy - 1.0f) * h;
            sx[s][2 * e + 1] = y;
        }
    for (int py = 0; py < TP_DATA_SIDE; py++)
        for (int px = 0; px < TP_DATA_SIDE; px++) {
            float d = 1e9f;
            for (int s = 0; s < 7; s++)
                if (digit_segs[label] >> s & 1)
                    d = fminf(
                        d, seg_dist(px + 0.5f, py + 0.5f, sx[s][0], sx[s][1], sx[s][2], sx[s][3]));
            float v = ink * fminf(1.0f, fmaxf(0.0f, thick - d + 0.5f));
            img[py * TP_DATA_SIDE + px] = v + 0.15f * gauss(&r);
        }
    return label;
}

/* One bilinear resampling pass of src into dst under rotation+shift about the center. */
static void resample(const float *src, float *dst, float cs, float sn, float tx, float ty) {
    const float c = (TP_DATA_SIDE - 1) * 0.5f;
    for (int y = 0; y < TP_DATA_SIDE; y++)
        for (int x = 0; x < TP_DATA_SIDE; x++) {
            float xr = x - c - tx, yr = y - c - ty;
            float sxp = cs * xr + sn * yr + c, syp = -sn * xr + cs * yr + c;
            int x0 = (int)floorf(sxp), y0 = (int)floorf(syp);
            float fx = sxp - x0, fy = syp - y0, v = 0.0f;
            for (int q = 0; q < 4; q++) {
                int xx = x0 + (q & 1), yy = y0 + (q >> 1);
                float wgt = ((q & 1) ? fx : 1 - fx) * ((q >> 1) ? fy : 1 - fy);
                if (xx >= 0 && xx < TP_DATA_SIDE && yy >= 0 && yy < TP_DATA_SIDE)
                    v += wgt * src[yy * TP_DATA_SIDE + xx];
            }
            dst[y * TP_DATA_SIDE + x] = v;
        }
}

void tp_data_augment(uint64_t seed, uint64_t index, int cost, float *img, float *scratch) {
    if (cost <= 0)
        return;
    rng r = rng_for(seed, index, 2);
    float ang = range_f(&r, -0.21f, 0.21f), tx = range_f(&r, -2.0f, 2.0f);
    float ty = range_f(&r, -2.0f, 2.0f);
    float cs = cosf(ang), sn = sinf(ang);
    for (int pass = 0; pass < cost; pass++) /* same output each pass: cost is CPU time only */
        resample(img, scratch, cs, sn, tx, ty);
    for (int i = 0; i < TP_DATA_PIXELS; i++)
        img[i] = scratch[i] + 0.05f * gauss(&r);
}
