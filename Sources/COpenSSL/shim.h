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
