/*===- gdn_model.h - C API of a model compiled by gdn-compile -----*- C -*-===*\
|*                                                                            *|
|* `gdn-compile model.json --target=cpu -o DIR` writes DIR/libgdn-model.so    *|
|* with this API, DIR/gdn-model (an executable over it) and this header.      *|
|* The library carries the model description it was compiled from; the       *|
|* weights are a safetensors file, mapped into memory when they are f32.      *|
|*                                                                            *|
|* A gdn_model holds one batch of equal-length sequences and their caches     *|
|* (per GDN layer: conv state and delta-rule state, constant in the context   *|
|* length; per MLA layer: latent and RoPE key of every token so far).         *|
|* Functions that can fail return 0 on success and -1 on failure, with the    *|
|* message in gdn_model_last_error(); a failed call leaves the model as it    *|
|* was. Every argument is checked before memory is read through it; on a      *|
|* NULL model the accessors return -1 (gdn_model_logits: NULL).               *|
|* One gdn_model must not be used from                                        *|
|* two threads at once; the compiled code itself runs on OpenMP threads.      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef GDN_MODEL_H
#define GDN_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports this API and nothing else (it is built with hidden
 * visibility). */
#if defined(__GNUC__)
#define GDN_MODEL_API __attribute__((visibility("default")))
#else
#define GDN_MODEL_API
#endif

typedef struct gdn_model gdn_model;

/* The most sequences one gdn_model holds; larger batches are refused before
 * anything is allocated. */
#define GDN_MODEL_MAX_BATCH 65536

/* The model description (JSON) the library was compiled from. */
GDN_MODEL_API const char *gdn_model_description(void);

/* The weights file named at compile time (absolute path), the default for
 * gdn_model_load(NULL). */
GDN_MODEL_API const char *gdn_model_default_weights(void);

/* Loads and validates the weights (every tensor present, with its shape,
 * in f32 or bf16); NULL on failure. `weights_path` NULL: the default. */
GDN_MODEL_API gdn_model *gdn_model_load(const char *weights_path);

GDN_MODEL_API void gdn_model_free(gdn_model *model);

/* The device the model runs on, for people: "CPU" for a CPU build, the GPU's
 * name and CUDA device number for a CUDA build ("no CUDA device" without
 * one). */
GDN_MODEL_API const char *gdn_model_device(void);

/* The message of the last failure on this thread ("" if none). */
GDN_MODEL_API const char *gdn_model_last_error(void);

GDN_MODEL_API int64_t gdn_model_vocab_size(const gdn_model *model);
GDN_MODEL_API int64_t gdn_model_max_context(const gdn_model *model);
/* 1 if the model's tokenizer is byte-level (token id = byte value). */
GDN_MODEL_API int gdn_model_byte_tokenizer(const gdn_model *model);

/* The tokenizer.json of a Hugging Face checkpoint, as found beside its
 * config.json at compile time (absolute path), or "" when there was none;
 * gdn-model encodes text prompts with it (gdn_tokenizer.h). */
GDN_MODEL_API const char *gdn_model_tokenizer_path(void);

/* Starts `batch` new sequences from `ids` [batch, tokens] (row-major):
 * forgets the previous ones, computes the logits of every position. */
GDN_MODEL_API int gdn_model_prefill(gdn_model *model, const int64_t *ids,
                                    int64_t batch, int64_t tokens);

/* Continues the sequences by `tokens` more tokens each, `ids` [batch,
 * tokens] (a prompt prefilled in chunks); `batch` must be the batch of the
 * sequences, and there must be sequences (a prefill first). */
GDN_MODEL_API int gdn_model_extend(gdn_model *model, const int64_t *ids,
                                   int64_t batch, int64_t tokens);

/* Decodes one token per sequence, `ids` [batch]. */
GDN_MODEL_API int gdn_model_decode(gdn_model *model, const int64_t *ids);

/* The logits [batch, tokens, vocab] of the last prefill, extend or decode
 * (tokens = 1 after decode, and with gdn_model_set_last_logits_only: the
 * last position's); valid until the next call on `model`. On a
 * GPU the first call after a step copies them to the host; NULL (batch and
 * tokens 0) if that fails, with the reason in gdn_model_last_error. */
GDN_MODEL_API const float *gdn_model_logits(const gdn_model *model,
                                            int64_t *batch, int64_t *tokens);

/* The logits [batch, vocab] of each sequence's last position after the
 * last prefill, extend or decode: what sampling the next token needs, and
 * on a GPU the only logits copied to the host. Valid until the next call on
 * `model`; NULL (batch 0) as gdn_model_logits. */
GDN_MODEL_API const float *gdn_model_last_logits(const gdn_model *model,
                                                 int64_t *batch);

/* With `enabled` != 0, later prefills and extends compute the logits of
 * each sequence's last position only (what generation samples from): the
 * LM head and final norm of the other positions, a prompt's largest
 * product, are skipped. Off by default (the logits of every position, which
 * perplexity needs). */
GDN_MODEL_API int gdn_model_set_last_logits_only(gdn_model *model,
                                                 int enabled);

/* With `enabled` != 0, every later prefill, extend and decode scans the new
 * caches (layer by layer) and the logits for NaN and Inf, and fails on the
 * first with the layer, the cache, the sequence and the position; the
 * caches, the position and the logits then stay as before that call. Off
 * by default: the scan reads every cache once per step. */
GDN_MODEL_API int gdn_model_set_check_numerics(gdn_model *model, int enabled);

/* Steps of one token per sequence (decode, and prefills or extends of one
 * token) run on a GPU as one CUDA graph per batch size: recorded at the
 * first such step and replayed after, with the kernels' arguments updated
 * where the caches moved or grew. On by default; `enabled` == 0 launches
 * every kernel from the host instead. No effect on a CPU. */
GDN_MODEL_API int gdn_model_set_decode_graphs(gdn_model *model, int enabled);

/* How decode steps ran so far: graphs recorded (one per batch size, again
 * where a step's work changed shape, as when a temporary outgrew its
 * node), graph replays, and kernel nodes whose arguments a replay updated.
 * All zero on a CPU or with decode graphs off. Any pointer may be NULL. */
GDN_MODEL_API int gdn_model_decode_graph_counts(const gdn_model *model,
                                                int64_t *recorded,
                                                int64_t *replayed,
                                                int64_t *updated_nodes);

/* Tokens per sequence so far (prompt and generated). */
GDN_MODEL_API int64_t gdn_model_position(const gdn_model *model);
GDN_MODEL_API int64_t gdn_model_batch(const gdn_model *model);

/* Cache bytes of one sequence now: the GDN layers' states (constant) and
 * the caches that grow with the position (MLA latents and RoPE keys, or
 * attention keys and values), in `mla_bytes`. */
GDN_MODEL_API int64_t gdn_model_cache_bytes(const gdn_model *model,
                                            int64_t *gdn_bytes,
                                            int64_t *mla_bytes);

#ifdef __cplusplus
}
#endif

#endif /* GDN_MODEL_H */
