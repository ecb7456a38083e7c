/* `ckh shrink FILE`: the verb over the shrinker (search/shrink.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckh/err.h"
#include "cli/cli.h"
#include "cli/opt.h"
#include "model/scenario.h"
#include "search/shrink.h"

/* ---- the command ---- */

int ckh_shrink_main(int argc, char **argv)
{
    const char *in = NULL, *outp = NULL;
    size_t max_runs = 0;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0) && i + 1 < argc) {
            outp = argv[++i];
        } else if (strcmp(argv[i], "--max-runs") == 0 && i + 1 < argc) {
            char msg[200];
            uint64_t v = 0;
            if (ckh_opt_u64("max-runs", argv[++i], 0, SIZE_MAX, &v, msg, sizeof msg) != 0) {
                fprintf(stderr, "ckh shrink: %s\n", msg);
                return 2;
            }
            max_runs = (size_t)v;
        } else if (strcmp(argv[i], "--help") == 0) {
            printf("usage: ckh shrink FILE [-o OUT] [--max-runs N]\n"
                   "Shrinks a failing scenario to a small one that fails the same oracle with\n"
                   "the same cause; writes OUT (default FILE with .shrunk.yaml).\n"
                   "See docs/FUZZING.md.\n");
            return 0;
        } else if (argv[i][0] == '-' || in) {
            fprintf(stderr, "ckh shrink: unexpected argument '%s'\n", argv[i]);
            return 2;
        } else {
            in = argv[i];
        }
    }
    if (!in) {
        fprintf(stderr, "usage: ckh shrink FILE [-o OUT] [--max-runs N]\n");
        return 2;
    }
    size_t len = 0;
    char *text = NULL;
    struct ckh_scn_error rerr;
    if (ckh_scn_read_file(in, NULL, &text, &len, &rerr) != 0) {
        char where[900];
        ckh_scn_error_format(&rerr, where, sizeof where);
        fprintf(stderr, "ckh shrink: %s\n", where);
        return 2;
    }
    char def_out[1024];
    if (!outp) {
        const char *dot = strrchr(in, '.');
        int stem = dot && !strchr(dot, '/') ? (int)(dot - in) : (int)strlen(in);
        snprintf(def_out, sizeof def_out, "%.*s.shrunk.yaml", stem, in);
        outp = def_out;
    }
    struct ckh_shrink_config cfg = {.max_runs = max_runs};
    struct ckh_shrink_stats st;
    char msg[600], *out = NULL;
    int rc = ckh_shrink_text(text, len, in, &cfg, &out, &st, msg, sizeof msg);
    free(text);
    if (rc) {
        fprintf(stderr, "ckh shrink: %s\n", msg[0] ? msg : ckh_strerror(rc));
        return rc == CKH_EINVAL ? 2 : 3;
    }
    rc = ckh_shrink_write(outp, out);
    free(out);
    if (rc) {
        fprintf(stderr, "ckh shrink: cannot write %s: %s\n", outp, ckh_strerror(rc));
        return 3;
    }
    printf("shrunk %s in %zu runs: %zu -> %zu faults, %u -> %u nodes%s; fails %s: %s\n"
           "replay: ckh run %s\n",
           in, st.runs, st.faults_before, st.faults_after, st.nodes_before, st.nodes_after,
           st.concrete ? ", concrete triggers" : "", st.oracle, st.cause, outp);
    return 0;
}
