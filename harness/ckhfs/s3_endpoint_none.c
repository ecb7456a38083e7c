/* The S3 endpoint in a ckh built without libmicrohttpd or expat
 * (-DCKH_S3=OFF, or the packages missing): every start says so by name,
 * and the tests that need the endpoint skip. */
#include "ckhfs/s3_endpoint.h"

#include "ckh/err.h"

bool ckh_s3_available(void)
{
    return false;
}

int ckh_s3_server_start(const struct ckh_s3_server_config *cfg, struct ckh_s3_server **out, char *err, size_t errlen)
{
    (void)cfg;
    if (out != NULL)
        *out = NULL;
    return ckh_errf(err, errlen, CKH_EUNSUPPORTED,
                    "s3 endpoint: this ckh was built without it (install Debian's libmicrohttpd-dev and "
                    "libexpat1-dev, scripts/setup.sh does, and configure again)");
}

uint16_t ckh_s3_server_port(const struct ckh_s3_server *srv, int node)
{
    (void)srv;
    (void)node;
    return 0;
}

void ckh_s3_server_url(const struct ckh_s3_server *srv, int node, char *buf, size_t n)
{
    (void)srv;
    (void)node;
    if (n > 0)
        buf[0] = '\0';
}

void ckh_s3_server_lock(struct ckh_s3_server *srv)
{
    (void)srv;
}

void ckh_s3_server_unlock(struct ckh_s3_server *srv)
{
    (void)srv;
}

void ckh_s3_server_stop(struct ckh_s3_server *srv)
{
    (void)srv;
}
