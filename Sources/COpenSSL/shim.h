#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/param_build.h>

/* EVP_PKEY_fromdata selections: the macros are expressions Swift does not import. */
static const int COPENSSL_EVP_PKEY_PUBLIC_KEY = EVP_PKEY_PUBLIC_KEY;
static const int COPENSSL_EVP_PKEY_KEYPAIR = EVP_PKEY_KEYPAIR;

/* libssl settings that are macros over SSL_CTX_ctrl / SSL_ctrl (Swift imports no function-like macro). */
static inline long copenssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long copenssl_ctx_set_groups_list(SSL_CTX *ctx, const char *list) {
    return SSL_CTX_set1_groups_list(ctx, list);
}
static inline long copenssl_ctx_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static inline long copenssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long copenssl_ctx_add0_chain_cert(SSL_CTX *ctx, X509 *cert) { return SSL_CTX_add0_chain_cert(ctx, cert); }
static inline long copenssl_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
/* SSL_OP_* are SSL_OP_BIT(n) expressions. */
static const uint64_t COPENSSL_SSL_OP_NO_RENEGOTIATION = SSL_OP_NO_RENEGOTIATION;
static const uint64_t COPENSSL_SSL_OP_NO_COMPRESSION = SSL_OP_NO_COMPRESSION;
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
