#include <curl/curl.h>

/*
 * Swift cannot call C variadic functions, and curl_easy_setopt, curl_multi_setopt and
 * curl_easy_getinfo are variadic: these wrappers fix the third argument's type, one per kind of
 * argument libcurl reads for an option (long, pointer, curl_off_t, and each callback signature
 * Outbound installs). Each does nothing but forward.
 */

static inline CURLcode chronir_curl_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode chronir_curl_easy_setopt_pointer(CURL *easy, CURLoption option, const void *value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode chronir_curl_easy_setopt_off_t(CURL *easy, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}

/* CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION share this signature. */
static inline CURLcode chronir_curl_easy_setopt_write_callback(CURL *easy, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode chronir_curl_easy_setopt_opensocket_callback(
    CURL *easy, CURLoption option, curl_opensocket_callback value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode chronir_curl_easy_setopt_closesocket_callback(
    CURL *easy, CURLoption option, curl_closesocket_callback value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode chronir_curl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}

static inline CURLMcode chronir_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

static inline CURLMcode chronir_curl_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) {
    return curl_multi_setopt(multi, option, value);
}

static inline CURLMcode chronir_curl_multi_setopt_socket_callback(
    CURLM *multi, CURLMoption option, curl_socket_callback value) {
    return curl_multi_setopt(multi, option, value);
}

static inline CURLMcode chronir_curl_multi_setopt_timer_callback(
    CURLM *multi, CURLMoption option, curl_multi_timer_callback value) {
    return curl_multi_setopt(multi, option, value);
}

/* CURLOPT_READFUNCTION: the upload body (an SMTP message). */
static inline CURLcode chronir_curl_easy_setopt_read_callback(CURL *easy, CURLoption option, curl_read_callback value) {
    return curl_easy_setopt(easy, option, value);
}
