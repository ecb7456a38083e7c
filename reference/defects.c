/* Defect switches: the table behind include/ckh/defects.h.
 *
 * The table is generated from CKH_DEFECT_MAP, so a new switch needs one line
 * there; names are looked up linearly (the table is tiny).
 */
#include "ckh/defects.h"

#include <stdio.h>
#include <string.h>

#include "ckh/err.h"

struct defect_info {
    const char *name;      /* "no-fsync" */
    const char *component; /* "atomic" */
    const char *desc;      /* one line */
};

static const struct defect_info defect_table[CKH_DEFECT__COUNT] = {
#define DEFECT_ROW(e, name, comp, desc) [CKH_DEFECT_##e] = {name, comp, desc},
    CKH_DEFECT_MAP(DEFECT_ROW)
#undef DEFECT_ROW
};

_Static_assert(CKH_DEFECT__COUNT <= 64, "defect set holds 64 switches");

int ckh_defect_enable(struct ckh_defect_set *s, enum ckh_defect d)
{
    if (!s || (unsigned)d >= CKH_DEFECT__COUNT)
        return CKH_EINVAL;
    s->bits |= 1ull << (unsigned)d;
    return 0;
}

const char *ckh_defect_name(enum ckh_defect d)
{
    return (unsigned)d < CKH_DEFECT__COUNT ? defect_table[d].name : NULL;
}

const char *ckh_defect_component(enum ckh_defect d)
{
    return (unsigned)d < CKH_DEFECT__COUNT ? defect_table[d].component : NULL;
}

const char *ckh_defect_desc(enum ckh_defect d)
{
    return (unsigned)d < CKH_DEFECT__COUNT ? defect_table[d].desc : NULL;
}

int ckh_defect_from_name(const char *name)
{
    if (!name)
        return CKH_ENOTFOUND;
    for (int d = 0; d < CKH_DEFECT__COUNT; d++)
        if (strcmp(defect_table[d].name, name) == 0)
            return d;
    return CKH_ENOTFOUND;
}

int ckh_defect_parse(struct ckh_defect_set *s, const char *list, char *msg, size_t msglen)
{
    if (!s)
        return CKH_EINVAL;
    struct ckh_defect_set out = *s;
    const char *p = list ? list : "";
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char name[64];
        if (len >= sizeof name) {
            if (msg && msglen)
                snprintf(msg, msglen, "unknown defect '%.*s'", (int)(len > 60 ? 60 : len), p);
            return CKH_ENOTFOUND;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        if (len) {
            int d = ckh_defect_from_name(name);
            if (d < 0) {
                if (msg && msglen)
                    snprintf(msg, msglen, "unknown defect '%s'", name);
                return CKH_ENOTFOUND;
            }
            out.bits |= 1ull << (unsigned)d;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    *s = out;
    return 0;
}
