/* Names and classes of operation kinds, from the table in op.h. */
#include <string.h>

#include "ckh/op.h"

static const char *const op_names[] = {
#define CKH__OP_NAME(e, s, c) s,
    CKH_OP_MAP(CKH__OP_NAME)
#undef CKH__OP_NAME
};

static const enum ckh_op_class op_classes[] = {
#define CKH__OP_CLASS(e, s, c) CKH_OPC_##c,
    CKH_OP_MAP(CKH__OP_CLASS)
#undef CKH__OP_CLASS
};

const char *ckh_op_name(enum ckh_op_kind k)
{
    if ((unsigned)k >= CKH_OP__COUNT)
        return "?";
    return op_names[k];
}

int ckh_op_from_name(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < CKH_OP__COUNT; i++)
        if (strcmp(op_names[i], name) == 0)
            return i;
    return -1;
}

enum ckh_op_class ckh_op_class(enum ckh_op_kind k)
{
    if ((unsigned)k >= CKH_OP__COUNT)
        return CKH_OPC_NODE;
    return op_classes[k];
}
