/* The record API's wrappers (include/ckh/record.h). */
#include <math.h>
#include <string.h>

#include "ckh/err.h"
#include "ckh/record.h"

int ckh_record_name_check(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > CKH_RECORD_NAME_MAX)
        return CKH_EINVAL;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-'))
            return CKH_EINVAL;
    }
    return 0;
}

int ckh_record_step(struct ckh_record *r, const struct ckh_rec_step *s)
{
    return r && r->ops && r->ops->step ? r->ops->step(r, s) : 0;
}

int ckh_record_resume(struct ckh_record *r, const struct ckh_rec_resume *s)
{
    return r && r->ops && r->ops->resume ? r->ops->resume(r, s) : 0;
}

int ckh_record_save(struct ckh_record *r, const struct ckh_rec_save *s)
{
    return r && r->ops && r->ops->save ? r->ops->save(r, s) : 0;
}

int ckh_record_final(struct ckh_record *r, const struct ckh_rec_final *s)
{
    return r && r->ops && r->ops->final ? r->ops->final(r, s) : 0;
}
