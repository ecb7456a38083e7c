/* Test-only entries of the simulator (sim/): each breaks one invariant
 * that sim/ asserts with CKH_ASSERT, so that a test can see the assertion
 * fire (Check's tcase_add_test_raise_signal(..., SIGABRT)). ckh itself
 * never calls them; neither should anything else. Part of the sim API:
 * only sim/, harness/ and tests may include this header.
 */
#ifndef CKH_SIM_TESTING_H
#define CKH_SIM_TESTING_H

#include <stdint.h>

#include "ckh/sim.h"
#include "ckh/simfs.h"

/* Makes the first node of the run queue due after its first child (no-op
 * with fewer than two runnable nodes); the next scheduling point asserts. */
void ckh__sim_test_break_heap(struct ckh_sim *sim);

/* Moves node id into collective generation gen without anything else
 * changing; a collective that completes with it asserts. */
void ckh__sim_test_set_coll_gen(struct ckh_sim *sim, int id, uint64_t gen);

/* Restarts the disk's op numbering: the next pending op asserts (pending
 * ops must be numbered in issue order). */
void ckh__simfs_test_rewind_seq(struct ckh_simfs *d);

/* Sets the live size of the file at path without trimming its content;
 * below the end of its data, the next write to it asserts. 0 or the
 * error of resolving path. */
int ckh__simfs_test_set_size(struct ckh_simfs *d, const char *path, uint64_t size_bytes);

/* Looks path up in the disk's durable copy (durable true: what the platter
 * holds) or its live copy, following no symlink: for a regular file, its
 * size, the first min(size, cap) bytes copied into buf and its inode
 * number in *ino (NULL: not wanted); -ENOENT when no entry is there,
 * -EISDIR for a directory or symlink, CKH_EINVAL for bad arguments. */
int64_t ckh__simfs_test_read(const struct ckh_simfs *d, const char *path, bool durable, void *buf,
                             size_t cap, uint64_t *ino);

#endif
