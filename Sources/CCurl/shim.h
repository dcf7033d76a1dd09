#include <curl/curl.h>

/*
 * Swift cannot call C variadic functions, and curl_easy_setopt, curl_multi_setopt and
 * curl_easy_getinfo are variadic: these wrappers fix the third argument's type, one per kind of
 * argument libcurl reads for an option (long, pointer, curl_off_t, and each callback signature
 * Outbound installs). Each does nothing but forward; the two macros below spell the forwarding once,
 * and each line after them declares one wrapper, chronir_curl_easy_setopt_<kind> or
 * chronir_curl_multi_setopt_<kind>, taking a value of the type named.
 */

#define CHRONIR_CURL_EASY_SETOPT(kind, type)                                                      \
    static inline CURLcode chronir_curl_easy_setopt_##kind(CURL *easy, CURLoption option, type value) { \
        return curl_easy_setopt(easy, option, value);                                             \
    }

#define CHRONIR_CURL_MULTI_SETOPT(kind, type)                                                         \
    static inline CURLMcode chronir_curl_multi_setopt_##kind(CURLM *multi, CURLMoption option, type value) { \
        return curl_multi_setopt(multi, option, value);                                               \
    }

CHRONIR_CURL_EASY_SETOPT(long, long)
CHRONIR_CURL_EASY_SETOPT(pointer, const void *)
CHRONIR_CURL_EASY_SETOPT(off_t, curl_off_t)
/* CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION share this signature. */
CHRONIR_CURL_EASY_SETOPT(write_callback, curl_write_callback)
/* CURLOPT_READFUNCTION: the upload body (an SMTP message). */
CHRONIR_CURL_EASY_SETOPT(read_callback, curl_read_callback)
CHRONIR_CURL_EASY_SETOPT(opensocket_callback, curl_opensocket_callback)
CHRONIR_CURL_EASY_SETOPT(closesocket_callback, curl_closesocket_callback)

CHRONIR_CURL_MULTI_SETOPT(long, long)
CHRONIR_CURL_MULTI_SETOPT(pointer, void *)
CHRONIR_CURL_MULTI_SETOPT(socket_callback, curl_socket_callback)
CHRONIR_CURL_MULTI_SETOPT(timer_callback, curl_multi_timer_callback)

static inline CURLcode chronir_curl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}
