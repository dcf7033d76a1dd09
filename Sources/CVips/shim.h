#include <vips/vips.h>

/*
 * Swift cannot call C variadic functions, and libvips' operations take NULL-terminated option
 * lists: these wrappers fix the options Media uses, one per call. Each does nothing but forward.
 */

static inline void chronir_vips_drop_log(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
    (void)domain; (void)level; (void)message; (void)data;
}

/*
 * VIPS_INIT is a macro; the operation cache is turned off (it would keep decoded uploads alive).
 * libvips' warnings ("error in tile 0 x 96" for every refused upload) would go to stderr unformatted:
 * they are dropped; every refusal reaches the caller as an error return instead.
 */
static inline int chronir_vips_init(void) {
    if (VIPS_INIT("chronir")) return -1;
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE, chronir_vips_drop_log, NULL);
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_concurrency_set(1);
    return 0;
}

/*
 * Each loader named, never vips_image_new_from_buffer's own sniffing: libvips here also carries the
 * ImageMagick loader, and only the formats Media sniffed first may reach a decoder. The header is
 * read at once, the pixels lazily (`sequential`: streamed top to bottom; else random access, which a
 * rotation needs and which holds the decoded image); truncated or damaged input fails the decode.
 */
static inline int chronir_vips_jpegload(const void *bytes, size_t length, VipsImage **out, int sequential) {
    return vips_jpegload_buffer((void *)bytes, length, out, "access", sequential ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM,
        "fail_on", VIPS_FAIL_ON_ERROR, NULL);
}

static inline int chronir_vips_pngload(const void *bytes, size_t length, VipsImage **out, int sequential) {
    return vips_pngload_buffer((void *)bytes, length, out, "access", sequential ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM,
        "fail_on", VIPS_FAIL_ON_ERROR, NULL);
}

static inline int chronir_vips_heifload(const void *bytes, size_t length, VipsImage **out, int sequential) {
    return vips_heifload_buffer((void *)bytes, length, out, "access", sequential ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM,
        "fail_on", VIPS_FAIL_ON_ERROR, NULL);
}

/* The first page of a PDF (poppler), rendered at 72 dpi. */
static inline int chronir_vips_pdfload(const void *bytes, size_t length, VipsImage **out, int sequential) {
    return vips_pdfload_buffer((void *)bytes, length, out, "access", sequential ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM,
        "fail_on", VIPS_FAIL_ON_ERROR, NULL);
}

/*
 * A PDF's first page rendered at `scale` × 72 dpi (a thumbnail-sized render: each drawing operator
 * then fills at most a thumbnail's pixels, not the page's 64 Mpixels at 72 dpi; issue 37).
 */
static inline int chronir_vips_pdfload_scaled(const void *bytes, size_t length, VipsImage **out, double scale) {
    return vips_pdfload_buffer((void *)bytes, length, out, "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_ERROR,
        "scale", scale, NULL);
}

static inline int chronir_vips_pdfload_file_scaled(const char *path, VipsImage **out, double scale) {
    return vips_pdfload(path, out, "access", VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_ERROR, "scale", scale, NULL);
}

/*
 * A render deadline (issue 37): once `deadline` (g_get_monotonic_time, µs) has passed, the next
 * progress report of an evaluation of the image — or of any image computed from it — kills it
 * (vips_image_set_kill); the evaluation then fails and `fired` says why. libvips reports progress
 * between the tiles it computes, so a single call into a loader (one poppler render) is not cut
 * short: the deadline bounds how many such calls run, the content bound how long one takes.
 */
typedef struct {
    gint64 deadline;
    int fired;
} chronir_deadline;

static void chronir_deadline_eval(VipsImage *image, VipsProgress *progress, gpointer data) {
    (void)progress;
    chronir_deadline *deadline = (chronir_deadline *)data;
    if (g_get_monotonic_time() >= deadline->deadline) {
        deadline->fired = 1;
        vips_image_set_kill(image, TRUE);
    }
}

/* Arms `deadline` (which must outlive every evaluation of `image`) to pass `milliseconds` from now. */
static inline void chronir_vips_set_deadline(VipsImage *image, chronir_deadline *deadline, long milliseconds) {
    deadline->deadline = g_get_monotonic_time() + (gint64)milliseconds * 1000;
    deadline->fired = 0;
    vips_image_set_progress(image, TRUE);
    g_signal_connect(image, "eval", G_CALLBACK(chronir_deadline_eval), deadline);
}

/*
 * The same four loaders reading a file (an upload the transport streamed to disk): libvips reads it
 * as it decodes instead of the upload being held in memory. Same options as the buffer loaders.
 */
static inline int chronir_vips_jpegload_file(const char *path, VipsImage **out, int sequential) {
    return vips_jpegload(path, out, "access", sequential ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM,
        "fail_on", VIPS_FAIL_ON_ERROR, NULL);
}

static inline int chronir_vips_pngload_file(const char *path, VipsImage **out, int sequential) {
    return vips_pngload(path, out, "access", sequential ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM,
        "fail_on", VIPS_FAIL_ON_ERROR, NULL);
}

static inline int chronir_vips_heifload_file(const char *path, VipsImage **out, int sequential) {
    return vips_heifload(path, out, "access", sequential ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM,
        "fail_on", VIPS_FAIL_ON_ERROR, NULL);
}

static inline int chronir_vips_pdfload_file(const char *path, VipsImage **out, int sequential) {
    return vips_pdfload(path, out, "access", sequential ? VIPS_ACCESS_SEQUENTIAL : VIPS_ACCESS_RANDOM,
        "fail_on", VIPS_FAIL_ON_ERROR, NULL);
}

/* Rotates upright from the EXIF orientation (before the EXIF block is stripped). */
static inline int chronir_vips_autorot(VipsImage *in, VipsImage **out) {
    return vips_autorot(in, out, NULL);
}

/* JPEG with every metadata block (EXIF, XMP, IPTC, ICC) stripped. */
static inline int chronir_vips_jpegsave(VipsImage *in, void **bytes, size_t *length, int quality) {
    return vips_jpegsave_buffer(in, bytes, length, "Q", quality, "strip", TRUE, NULL);
}

/* PNG with every metadata chunk stripped. */
static inline int chronir_vips_pngsave(VipsImage *in, void **bytes, size_t *length) {
    return vips_pngsave_buffer(in, bytes, length, "strip", TRUE, NULL);
}

/* A thumbnail no wider or taller than `side`, never enlarged (from an image already loaded). */
static inline int chronir_vips_thumbnail(VipsImage *in, VipsImage **out, int side) {
    return vips_thumbnail_image(in, out, side, "height", side, "size", VIPS_SIZE_DOWN, NULL);
}

/* A thumbnail of an encoded image (JPEG/PNG Media wrote itself), shrinking while it loads. */
static inline int chronir_vips_thumbnail_buffer(const void *bytes, size_t length, VipsImage **out, int side) {
    return vips_thumbnail_buffer((void *)bytes, length, out, side, "height", side, "size", VIPS_SIZE_DOWN, NULL);
}

/* Flattens an alpha channel onto white (JPEG thumbnails have none). */
static inline int chronir_vips_flatten(VipsImage *in, VipsImage **out) {
    double white[3] = {255, 255, 255};
    VipsArrayDouble *background = vips_array_double_new(white, 3);
    int result = vips_flatten(in, out, "background", background, NULL);
    vips_area_unref(VIPS_AREA(background));
    return result;
}

/* A HEIC (HEVC) encoding, so tests can build HEIC input with the same library. */
static inline int chronir_vips_heifsave(VipsImage *in, void **bytes, size_t *length) {
    return vips_heifsave_buffer(in, bytes, length, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_HEVC, NULL);
}

/* A solid-colour RGB test image (tests build their inputs with the same library). */
static inline int chronir_vips_black(VipsImage **out, int width, int height) {
    return vips_black(out, width, height, "bands", 3, NULL);
}

/* A JPEG keeping the image's metadata (tests write EXIF fields with vips_image_set_string first). */
static inline int chronir_vips_jpegsave_keep(VipsImage *in, void **bytes, size_t *length) {
    return vips_jpegsave_buffer(in, bytes, length, "Q", 90, NULL);
}

static inline void chronir_vips_unref(VipsImage *image) { g_object_unref(image); }
static inline void chronir_vips_free(void *bytes) { g_free(bytes); }
static inline int chronir_vips_has_operation(const char *nickname) {
    return vips_type_find("VipsOperation", nickname) != 0;
}
