// The C entry for the bare kernels: any op of the list (ops/all_ops.h) by name, created from its
// fields the way its plugin is (the same field table, checks and per-shape choices), run on a stream.
// Tensors travel as a dtype id (trtp_enums()["dtype"]) and a block of 9 int64: nbDims, d[0..7].
// Each function returns 0 (a pointer: non-null) on success; on failure -1 (null) and
// trtp_last_error() says why in one line. Nothing throws out of here.
#pragma once
#include <cstddef>

#ifndef TRTP_API
#define TRTP_API extern "C" __attribute__((visibility("default")))
#endif

// An op from its fields (names[i], types[i]: nvinfer1::PluginFieldType values, data[i], lengths[i]).
TRTP_API void* trtp_op_create(const char* op, int n, const char* const* names, const int* types, const void* const* data,
                              const int* lengths);

TRTP_API void trtp_op_destroy(void* h);

TRTP_API int trtp_op_nb_outputs(void* h);

// Every output's dims (one block of 9) for inputs of these dims.
TRTP_API int trtp_op_output_dims(void* h, int nb_in, const int* dtypes, const long long* dims, long long* out);

// Counts and shapes of nb_in inputs and nb_out outputs: the plugin's configure (checks, per-shape choices).
TRTP_API int trtp_op_configure(void* h, int nb_in, int nb_out, const int* dtypes, const long long* dims);

// Workspace bytes for inputs of these dims and any smaller; -1 on error.
TRTP_API long long trtp_op_workspace(void* h, int nb_in, const int* dtypes, const long long* dims);

// Uploads the op's weights in the current CUDA context (once; never in trtp_op_enqueue).
TRTP_API int trtp_op_initialize(void* h);

// Launches on `stream` what trtp_op_configure saw (its input count); the same descriptions again.
TRTP_API int trtp_op_enqueue(void* h, int nb_in, int nb_out, const int* dtypes, const long long* dims,
                             const void* const* inputs, void* const* outputs, void* workspace, void* stream);

// create, configure, initialize, enqueue, destroy: one launch (the weights uploaded, so not for a
// CUDA graph); workspace: at least trtp_op_workspace's bytes.
TRTP_API int trtp_run(const char* op, int n, const char* const* names, const int* types, const void* const* data,
                      const int* lengths, int nb_in, int nb_out, const int* dtypes, const long long* dims,
                      const void* const* inputs, void* const* outputs, void* workspace, size_t workspace_size,
                      void* stream);

// Why the last call on this thread failed ("" after a success).
TRTP_API const char* trtp_last_error();

// The schema of every op (JSON; trtplugins/schema.json is this text).
TRTP_API const char* trtp_schema();
