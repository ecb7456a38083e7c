/* The reference runtime (reference/): everything code under test offers,
 * in one include. See workspace.h, backend.h, job.h and epoch_workload.h. */
#ifndef CKH_REF_H
#define CKH_REF_H

#include "ckh/backend.h"
#include "ckh/job.h"
#include "ckh/epoch_workload.h"
#include "ckh/workspace.h"

#endif
