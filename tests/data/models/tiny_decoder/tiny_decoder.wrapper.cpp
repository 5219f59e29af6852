
#include <torch/csrc/inductor/aoti_include/cuda.h>
// Definition of AOTI runtime interface functions

#include <torch/csrc/inductor/aoti_runtime/interface.h>
#include <torch/csrc/inductor/aoti_runtime/model_container.h>

#include <iostream>
#include <vector>

#define CONVERT_EXCEPTION_TO_ERROR_CODE(...)      \
  try {                                           \
    __VA_ARGS__                                   \
  } catch (const std::exception& e) {             \
    std::cerr << "Error: " << e.what() << '\n';   \
    return AOTI_RUNTIME_FAILURE;                  \
  } catch (...) {                                 \
    std::cerr << "Unknown exception occurred.\n"; \
    return AOTI_RUNTIME_FAILURE;                  \
  }                                               \
  return AOTI_RUNTIME_SUCCESS;

#define AOTI_VECTOR_SIZE_CHECK(actual_size, expected_size, name)  \
  do {                                                            \
    AOTI_RUNTIME_CHECK(                                           \
        actual_size == expected_size,                             \
        "expected " + std::string(name) + " vector size to be " + \
            std::to_string(expected_size) + ", but got " +        \
            std::to_string(actual_size));                         \
  } while (0)

// AOTInductor uses at::addmm_out, which doesn't supports
// arguments that requires gradient. For this reason, we
// enforce no_grad context for run APIs.
//
// A RAII, thread local (!) guard that enables or disables grad mode upon
// construction, and sets it back to the original value upon destruction.
struct AOTINoGradGuard {
  AOTINoGradGuard() {
    aoti_torch_grad_mode_set_enabled(false);
  }
  AOTINoGradGuard(const AOTINoGradGuard&) = delete;
  AOTINoGradGuard(AOTINoGradGuard&&) noexcept = delete;
  ~AOTINoGradGuard() {
    aoti_torch_grad_mode_set_enabled(prev_mode);
  }
  AOTINoGradGuard& operator=(const AOTINoGradGuard&) = delete;
  AOTINoGradGuard& operator=(AOTINoGradGuard&&) noexcept = delete;
  bool prev_mode{aoti_torch_grad_mode_is_enabled()};
};

extern "C" {

AOTIRuntimeError AOTInductorModelContainerCreate(
    AOTInductorModelContainerHandle* container_handle,
    size_t num_models,
    bool is_cpu,
    const char* cubin_dir) {
      return AOTInductorModelContainerCreateWithDevice(
        container_handle,
        num_models,
        is_cpu ? "cpu" : "cuda",
        cubin_dir);
}

AOTIRuntimeError AOTInductorModelContainerCreateWithDevice(
    AOTInductorModelContainerHandle* container_handle,
    size_t num_models,
    const char* device_str,
    const char* cubin_dir) {

  if (num_models == 0) {
    std::cerr << "Error: num_models must be positive, but got 0\n";
    return AOTI_RUNTIME_FAILURE;
  }
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    std::optional<std::string> cubin_dir_opt;
    if (cubin_dir != nullptr) {
      cubin_dir_opt.emplace(cubin_dir);
    }
    auto* container = new torch::aot_inductor::AOTInductorModelContainer(
        num_models, std::string(device_str), cubin_dir_opt);
    *container_handle =
        reinterpret_cast<AOTInductorModelContainerHandle>(container);
  })
}


AOTIRuntimeError AOTInductorModelContainerDelete(
    AOTInductorModelContainerHandle container_handle) {
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    auto* container =
        reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
            container_handle);
    delete container;
  });
}

AOTIRuntimeError AOTInductorModelContainerRun(
    AOTInductorModelContainerHandle container_handle,
    AtenTensorHandle* input_handles, // array of input AtenTensorHandle; handles
                                     // are stolen; the array itself is borrowed
    size_t num_inputs,
    AtenTensorHandle*
        output_handles, // array for writing output AtenTensorHandle; handles
                        // will be stolen by the caller; the array itself is
                        // borrowed
    size_t num_outputs,
    AOTInductorStreamHandle stream_handle,
    AOTIProxyExecutorHandle proxy_executor_handle) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  AOTI_VECTOR_SIZE_CHECK(num_inputs, container->num_inputs(), "inputs");
  AOTI_VECTOR_SIZE_CHECK(num_outputs, container->num_outputs(), "outputs");

  auto stream =
      reinterpret_cast<torch::aot_inductor::DeviceStreamType>(stream_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    AOTINoGradGuard guard;
    container->run(
        input_handles, output_handles, stream, proxy_executor_handle);
  })
}

AOTIRuntimeError AOTInductorModelContainerRunSingleThreaded(
    AOTInductorModelContainerHandle container_handle,
    AtenTensorHandle* input_handles, // array of input AtenTensorHandle; handles
                                     // are stolen; the array itself is borrowed
    size_t num_inputs,
    AtenTensorHandle*
        output_handles, // array for writing output AtenTensorHandle; handles
                        // will be stolen by the caller; the array itself is
                        // borrowed
    size_t num_outputs,
    AOTInductorStreamHandle stream_handle,
    AOTIProxyExecutorHandle proxy_executor_handle) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  AOTI_VECTOR_SIZE_CHECK(num_inputs, container->num_inputs(), "inputs");
  AOTI_VECTOR_SIZE_CHECK(num_outputs, container->num_outputs(), "outputs");

  auto stream =
      reinterpret_cast<torch::aot_inductor::DeviceStreamType>(stream_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    AOTINoGradGuard guard;
    container->run_single_threaded(
        input_handles, output_handles, stream, proxy_executor_handle);
  })
}

AOTIRuntimeError AOTInductorModelContainerGetNumConstants(
    AOTInductorModelContainerHandle container_handle,
    size_t* num_constants) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
    { *num_constants = container->num_constants(); })
}

AOTIRuntimeError AOTInductorModelContainerGetConstantName(
    AOTInductorModelContainerHandle container_handle,
    size_t idx,
    const char** name) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
    { *name = container->constant_name(idx); })
}

AOTIRuntimeError AOTInductorModelContainerGetConstantOriginalFQN(
    AOTInductorModelContainerHandle container_handle,
    size_t idx,
    const char** original_fqn) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
    { *original_fqn = container->constant_original_fqn(idx); })
}

AOTIRuntimeError AOTInductorModelContainerGetConstantFromFolded(
    AOTInductorModelContainerHandle container_handle,
    size_t idx,
    bool* from_folded) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({ *from_folded = container->constant_from_folded(idx); })
}

AOTIRuntimeError AOTInductorModelContainerGetConstantType(
    AOTInductorModelContainerHandle container_handle,
    size_t idx,
    int32_t* type) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({ *type = container->constant_type(idx); })
}

AOTIRuntimeError AOTInductorModelContainerGetConstantDtype(
    AOTInductorModelContainerHandle container_handle,
    size_t idx,
    int32_t* dtype) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
    { *dtype = container->constant_dtype(idx); })
}

AOTIRuntimeError AOTInductorModelContainerGetConstantDataSize(
  AOTInductorModelContainerHandle container_handle,
  size_t idx,
  size_t* data_size) {
  auto* container =
    reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
        container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
    { *data_size = container->constant_data_size(idx); })
}

AOTIRuntimeError AOTInductorModelContainerExtractConstantsMap(
    AOTInductorModelContainerHandle container_handle,
    AOTInductorConstantMapHandle constant_map_handle,
    bool use_inactive) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto constants_map = reinterpret_cast<std::unordered_map<std::string, AtenTensorHandle>*>(constant_map_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
    { const auto ret = container->extract_constants_map(use_inactive);
      for (const auto& pair: ret) {
        constants_map->emplace(pair.first, pair.second);
      }
    })
}

AOTIRuntimeError AOTInductorModelContainerUpdateUserManagedConstantBuffer(
    AOTInductorModelContainerHandle container_handle,
    AOTInductorConstantMapHandle constant_map_handle,
    bool use_inactive,
    bool validate_full_update) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto input_map = reinterpret_cast<std::unordered_map<std::string, AtenTensorHandle>*>(constant_map_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    container->update_constant_buffer(
        *input_map, use_inactive, validate_full_update, /* user_managed = */ true);
  })
}

AOTIRuntimeError AOTInductorModelContainerUpdateUserManagedConstantBufferPairs(
    AOTInductorModelContainerHandle container_handle,
    const AOTInductorConstantMapEntry* pairs,
    size_t num_pairs,
    bool use_inactive,
    bool validate_full_update) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(container_handle);
  // Build a local unordered_map inside
  std::unordered_map<std::string, AtenTensorHandle> input_map;
  input_map.reserve(num_pairs);
  for (size_t i = 0; i < num_pairs; ++i) {
      input_map.emplace(pairs[i].name, pairs[i].handle);
  }
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    container->update_constant_buffer(
        input_map, use_inactive, validate_full_update, /*user_managed=*/true);
  })
}

AOTIRuntimeError AOTInductorModelContainerUpdateConstantBuffer(
    AOTInductorModelContainerHandle container_handle,
    AOTInductorConstantMapHandle constant_map_handle,
    bool use_inactive,
    bool validate_full_update) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto input_map = reinterpret_cast<std::unordered_map<std::string, AtenTensorHandle>*>(constant_map_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    container->update_constant_buffer(
        *input_map, use_inactive, validate_full_update);
  })
}

AOTIRuntimeError AOTInductorModelContainerUpdateInactiveConstantBuffer(
    AOTInductorModelContainerHandle container_handle,
    AOTInductorConstantMapHandle constant_map_handle) {
  return AOTInductorModelContainerUpdateConstantBuffer(container_handle,
          constant_map_handle,
          /*use_inactive*/ true,
          /*validate_full_update*/ true);
}

AOTIRuntimeError AOTInductorModelContainerFreeInactiveConstantBuffer(
    AOTInductorModelContainerHandle container_handle) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    container->free_inactive_constant_buffer();
  })
}

AOTIRuntimeError AOTInductorModelContainerRunConstantFolding(
    AOTInductorModelContainerHandle container_handle,
    bool use_inactive,
    AOTInductorStreamHandle stream_handle,
    AOTIProxyExecutorHandle proxy_executor_handle) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  auto stream =
      reinterpret_cast<torch::aot_inductor::DeviceStreamType>(stream_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    AOTINoGradGuard guard;
    container->run_const_fold(use_inactive, stream, proxy_executor_handle);
  })
}

AOTIRuntimeError AOTInductorModelContainerSwapConstantBuffer(
    AOTInductorModelContainerHandle container_handle) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    container->swap_constant_buffer();
  })
}

AOTIRuntimeError AOTInductorModelContainerGetNumInputs(
    AOTInductorModelContainerHandle container_handle,
    size_t* ret_num_inputs) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
      { *ret_num_inputs = container->num_inputs(); })
}

AOTIRuntimeError AOTInductorModelContainerGetInputName(
    AOTInductorModelContainerHandle container_handle,
    size_t input_idx,
    const char** ret_input_names) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
      { *ret_input_names = container->input_name(input_idx); })
}

AOTIRuntimeError AOTInductorModelContainerGetNumOutputs(
    AOTInductorModelContainerHandle container_handle,
    size_t* ret_num_outputs) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
      { *ret_num_outputs = container->num_outputs(); })
}

AOTIRuntimeError AOTInductorModelContainerGetOutputName(
    AOTInductorModelContainerHandle container_handle,
    size_t output_idx,
    const char** ret_output_names) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
      { *ret_output_names = container->output_name(output_idx); })
}

AOTIRuntimeError AOTInductorModelContainerGetCallSpec(
    AOTInductorModelContainerHandle container_handle,
    const char** in_spec,
    const char** out_spec) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    *in_spec = container->get_in_spec();
    *out_spec = container->get_out_spec();
  })
}

AOTIRuntimeError AOTInductorModelCreate(
    AOTInductorModelHandle* model_handle,
    AOTInductorConstantMapHandle constant_map_handle){
    CONVERT_EXCEPTION_TO_ERROR_CODE({
      auto constant_map = std::make_shared<torch::aot_inductor::ConstantMap>();
      auto constant_array = std::make_shared<std::vector<torch::aot_inductor::ConstantHandle>>();
      auto input_map = reinterpret_cast<std::unordered_map<std::string, AtenTensorHandle>*>(constant_map_handle);

      auto model = new torch::aot_inductor::AOTInductorModel(
          constant_map,
          constant_array,
          "cpu", // device_str is hardcoded, as AOTInductorModelCreate is only use for CPU models
          ""
      );

      if (input_map) {
        for (auto const& kv : *input_map) {
          constant_map->emplace(kv.first, kv.second);
        }
      } else {
        model->load_constants();
      }

      *model_handle = reinterpret_cast<AOTInductorModelHandle>(model);
    })}

AOTIRuntimeError AOTInductorModelRun(
    AOTInductorModelHandle model_handle,
    AtenTensorHandle* input_handles,
    AtenTensorHandle* output_handles) {
  auto model =
      reinterpret_cast<torch::aot_inductor::AOTInductorModel*>(model_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    AOTINoGradGuard guard;
    model->run_impl(
        input_handles,
        output_handles,
        (torch::aot_inductor::DeviceStreamType) nullptr,
        nullptr);
  })
}

AOTIRuntimeError AOTInductorModelDelete(AOTInductorModelHandle model_handle){
    CONVERT_EXCEPTION_TO_ERROR_CODE({
      auto model = reinterpret_cast<torch::aot_inductor::AOTInductorModel*>(
          model_handle);
      delete model;
    })}

AOTIRuntimeError AOTInductorModelGetNumOutputs(
    AOTInductorModelHandle model_handle,
    size_t* ret_num_outputs) {
  CONVERT_EXCEPTION_TO_ERROR_CODE({
      auto model = reinterpret_cast<torch::aot_inductor::AOTInductorModel*>(model_handle);
      *ret_num_outputs = model->num_outputs();
  })
}

AOTIRuntimeError AOTInductorModelUpdateConstantsMap(
    AOTInductorModelHandle model_handle,
    AOTInductorConstantMapHandle constant_map_handle) {
  auto model =
      reinterpret_cast<torch::aot_inductor::AOTInductorModel*>(model_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE({
    auto constant_map = std::make_shared<torch::aot_inductor::ConstantMap>();
    auto input_map =
        reinterpret_cast<std::unordered_map<std::string, AtenTensorHandle>*>(
            constant_map_handle);

    for (auto const& kv : *input_map) {
      constant_map->emplace(kv.first, kv.second);
    }
    model->update_constants_map(std::move(constant_map));
  })
}

AOTIRuntimeError AOTInductorModelContainerGetConstantsBlobSize(
    AOTInductorModelContainerHandle container_handle,
    uint64_t* ret_size) {
  auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
      { *ret_size = container->constant_blob_size(); })
}


// Load weights from a single blob in weight_blob_ptr
AOTIRuntimeError AOTInductorModelUpdateConstantsFromBlob(
    AOTInductorModelContainerHandle container_handle,
    const uint8_t* weight_blob_ptr){
    auto* container =
      reinterpret_cast<torch::aot_inductor::AOTInductorModelContainer*>(
          container_handle);
  CONVERT_EXCEPTION_TO_ERROR_CODE(
      {container->update_constants_from_blob(weight_blob_ptr); })
    }


} // extern "C"


#define CUDA_DRIVER_CHECK(EXPR)                    \
do {                                               \
    CUresult code = EXPR;                          \
    const char *msg;                               \
    CUresult code_get_error = cuGetErrorString(code, &msg); \
    if (code_get_error != CUDA_SUCCESS) {          \
        throw std::runtime_error(                  \
            std::string("CUDA driver error: ") +   \
            std::string("invalid error code!"));   \
    }                                              \
    if (code != CUDA_SUCCESS) {                    \
        throw std::runtime_error(                  \
            std::string("CUDA driver error: ") +   \
            std::string(msg));                     \
    }                                              \
} while (0);

static inline CUfunction loadKernel(
        std::string filePath,
        const std::string &funcName,
        uint32_t sharedMemBytes,
        const std::optional<std::string> &cubinDir = std::nullopt) {
    if (cubinDir) {
        std::filesystem::path p1{*cubinDir};
        std::filesystem::path p2{filePath};
        filePath = (p1 / p2.filename()).string();
    }

    CUmodule mod;
    CUfunction func;
    CUDA_DRIVER_CHECK(cuModuleLoad(&mod, filePath.c_str()));
    CUDA_DRIVER_CHECK(cuModuleGetFunction(&func, mod, funcName.c_str()));
    if (sharedMemBytes > 0) {
        CUDA_DRIVER_CHECK(cuFuncSetAttribute(
            func,
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            sharedMemBytes
        ))
    }
    return func;
}

static inline CUfunction loadKernel(const void* start, const std::string &funcName, uint32_t sharedMemBytes) {
    CUmodule mod;
    CUfunction func;
    CUDA_DRIVER_CHECK(cuModuleLoadData(&mod, start));
    CUDA_DRIVER_CHECK(cuModuleGetFunction(&func, mod, funcName.c_str()));
    if (sharedMemBytes > 0) {
        CUDA_DRIVER_CHECK(cuFuncSetAttribute(
            func,
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            sharedMemBytes
        ))
    }
    return func;
}

static inline void launchKernel(
        CUfunction func,
        uint32_t gridX,
        uint32_t gridY,
        uint32_t gridZ,
        uint32_t numWarps,
        uint32_t sharedMemBytes,
        void* args[],
        cudaStream_t stream) {
    CUDA_DRIVER_CHECK(cuLaunchKernel(
        func, gridX, gridY, gridZ, 32*numWarps, 1, 1, sharedMemBytes, stream, args, nullptr
    ));
}
CACHE_TORCH_DTYPE(float32);
CACHE_TORCH_DEVICE(cuda);
CACHE_TORCH_LAYOUT(strided);
namespace torch::aot_inductor {
namespace {
class AOTInductorModelKernels : public AOTInductorModelKernelsBase {
  public:
    CUfunction triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4{nullptr};
    CUfunction triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11{nullptr};
    CUfunction triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12{nullptr};
    CUfunction triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7{nullptr};
    CUfunction triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14{nullptr};
    CUfunction triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0{nullptr};
    CUfunction triton_poi_fused__unsafe_view_index_copy_transpose_view_2{nullptr};
    CUfunction triton_poi_fused_clone_transpose_view_6{nullptr};
    CUfunction triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5{nullptr};
    CUfunction triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15{nullptr};
    CUfunction triton_tem_fused__unsafe_view_bmm_transpose_view_3{nullptr};
    CUfunction triton_tem_fused__unsafe_view_mm_mul_silu_view_10{nullptr};
    CUfunction triton_tem_fused__unsafe_view_mm_mul_silu_view_13{nullptr};
    CUfunction triton_tem_fused__unsafe_view_mm_mul_silu_view_9{nullptr};
    CUfunction triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1{nullptr};
    CUfunction triton_tem_fused_mm_view_8{nullptr};
};
}  // namespace


extern "C" {
    extern const unsigned char __triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4_start[];
    extern const unsigned char __triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11_start[];
    extern const unsigned char __triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12_start[];
    extern const unsigned char __triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7_start[];
    extern const unsigned char __triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14_start[];
    extern const unsigned char __triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0_start[];
    extern const unsigned char __triton_poi_fused__unsafe_view_index_copy_transpose_view_2_start[];
    extern const unsigned char __triton_poi_fused_clone_transpose_view_6_start[];
    extern const unsigned char __triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5_start[];
    extern const unsigned char __triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15_start[];
    extern const unsigned char __triton_tem_fused__unsafe_view_bmm_transpose_view_3_start[];
    extern const unsigned char __triton_tem_fused__unsafe_view_mm_mul_silu_view_10_start[];
    extern const unsigned char __triton_tem_fused__unsafe_view_mm_mul_silu_view_13_start[];
    extern const unsigned char __triton_tem_fused__unsafe_view_mm_mul_silu_view_9_start[];
    extern const unsigned char __triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1_start[];
    extern const unsigned char __triton_tem_fused_mm_view_8_start[];
}

AOTInductorModel::AOTInductorModel(std::shared_ptr<ConstantMap> constants_map,
                                   std::shared_ptr<std::vector<ConstantHandle>> constants_array,
                                   const std::string& device_str,
                                   std::optional<std::string> cubin_dir)
    : AOTInductorModelBase(2,
                           1,
                           40,
                           device_str,
                           std::move(cubin_dir),
                           false) {
    inputs_info_[0].name = "arg25_1";
    inputs_info_[1].name = "arg26_1";
    constants_info_[0].name = "layers_0_wq_weight";
    constants_info_[0].dtype = cached_torch_dtype_float32;
    constants_info_[0].device_type = cached_torch_device_type_cuda;
    constants_info_[0].offset = 0;
    constants_info_[0].data_size = 16384;
    constants_info_[0].from_folded = false;
    constants_info_[0].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[0].shape = {64, 64};
    constants_info_[0].stride = {64, 1};
    constants_info_[0].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[0].original_fqn = "layers.0.wq.weight";
    constants_info_[1].name = "layers_0_wk_weight";
    constants_info_[1].dtype = cached_torch_dtype_float32;
    constants_info_[1].device_type = cached_torch_device_type_cuda;
    constants_info_[1].offset = 0;
    constants_info_[1].data_size = 16384;
    constants_info_[1].from_folded = false;
    constants_info_[1].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[1].shape = {64, 64};
    constants_info_[1].stride = {64, 1};
    constants_info_[1].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[1].original_fqn = "layers.0.wk.weight";
    constants_info_[2].name = "layers_0_wv_weight";
    constants_info_[2].dtype = cached_torch_dtype_float32;
    constants_info_[2].device_type = cached_torch_device_type_cuda;
    constants_info_[2].offset = 0;
    constants_info_[2].data_size = 16384;
    constants_info_[2].from_folded = false;
    constants_info_[2].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[2].shape = {64, 64};
    constants_info_[2].stride = {64, 1};
    constants_info_[2].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[2].original_fqn = "layers.0.wv.weight";
    constants_info_[3].name = "layers_0_wo_weight";
    constants_info_[3].dtype = cached_torch_dtype_float32;
    constants_info_[3].device_type = cached_torch_device_type_cuda;
    constants_info_[3].offset = 0;
    constants_info_[3].data_size = 16384;
    constants_info_[3].from_folded = false;
    constants_info_[3].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[3].shape = {64, 64};
    constants_info_[3].stride = {64, 1};
    constants_info_[3].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[3].original_fqn = "layers.0.wo.weight";
    constants_info_[4].name = "layers_0_w1_weight";
    constants_info_[4].dtype = cached_torch_dtype_float32;
    constants_info_[4].device_type = cached_torch_device_type_cuda;
    constants_info_[4].offset = 0;
    constants_info_[4].data_size = 32768;
    constants_info_[4].from_folded = false;
    constants_info_[4].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[4].shape = {128, 64};
    constants_info_[4].stride = {64, 1};
    constants_info_[4].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[4].original_fqn = "layers.0.w1.weight";
    constants_info_[5].name = "layers_0_w3_weight";
    constants_info_[5].dtype = cached_torch_dtype_float32;
    constants_info_[5].device_type = cached_torch_device_type_cuda;
    constants_info_[5].offset = 0;
    constants_info_[5].data_size = 32768;
    constants_info_[5].from_folded = false;
    constants_info_[5].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[5].shape = {128, 64};
    constants_info_[5].stride = {64, 1};
    constants_info_[5].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[5].original_fqn = "layers.0.w3.weight";
    constants_info_[6].name = "layers_0_w2_weight";
    constants_info_[6].dtype = cached_torch_dtype_float32;
    constants_info_[6].device_type = cached_torch_device_type_cuda;
    constants_info_[6].offset = 0;
    constants_info_[6].data_size = 32768;
    constants_info_[6].from_folded = false;
    constants_info_[6].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[6].shape = {64, 128};
    constants_info_[6].stride = {128, 1};
    constants_info_[6].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[6].original_fqn = "layers.0.w2.weight";
    constants_info_[7].name = "layers_1_wq_weight";
    constants_info_[7].dtype = cached_torch_dtype_float32;
    constants_info_[7].device_type = cached_torch_device_type_cuda;
    constants_info_[7].offset = 0;
    constants_info_[7].data_size = 16384;
    constants_info_[7].from_folded = false;
    constants_info_[7].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[7].shape = {64, 64};
    constants_info_[7].stride = {64, 1};
    constants_info_[7].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[7].original_fqn = "layers.1.wq.weight";
    constants_info_[8].name = "layers_1_wk_weight";
    constants_info_[8].dtype = cached_torch_dtype_float32;
    constants_info_[8].device_type = cached_torch_device_type_cuda;
    constants_info_[8].offset = 0;
    constants_info_[8].data_size = 16384;
    constants_info_[8].from_folded = false;
    constants_info_[8].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[8].shape = {64, 64};
    constants_info_[8].stride = {64, 1};
    constants_info_[8].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[8].original_fqn = "layers.1.wk.weight";
    constants_info_[9].name = "layers_1_wv_weight";
    constants_info_[9].dtype = cached_torch_dtype_float32;
    constants_info_[9].device_type = cached_torch_device_type_cuda;
    constants_info_[9].offset = 0;
    constants_info_[9].data_size = 16384;
    constants_info_[9].from_folded = false;
    constants_info_[9].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[9].shape = {64, 64};
    constants_info_[9].stride = {64, 1};
    constants_info_[9].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[9].original_fqn = "layers.1.wv.weight";
    constants_info_[10].name = "layers_1_wo_weight";
    constants_info_[10].dtype = cached_torch_dtype_float32;
    constants_info_[10].device_type = cached_torch_device_type_cuda;
    constants_info_[10].offset = 0;
    constants_info_[10].data_size = 16384;
    constants_info_[10].from_folded = false;
    constants_info_[10].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[10].shape = {64, 64};
    constants_info_[10].stride = {64, 1};
    constants_info_[10].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[10].original_fqn = "layers.1.wo.weight";
    constants_info_[11].name = "layers_1_w1_weight";
    constants_info_[11].dtype = cached_torch_dtype_float32;
    constants_info_[11].device_type = cached_torch_device_type_cuda;
    constants_info_[11].offset = 0;
    constants_info_[11].data_size = 32768;
    constants_info_[11].from_folded = false;
    constants_info_[11].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[11].shape = {128, 64};
    constants_info_[11].stride = {64, 1};
    constants_info_[11].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[11].original_fqn = "layers.1.w1.weight";
    constants_info_[12].name = "layers_1_w3_weight";
    constants_info_[12].dtype = cached_torch_dtype_float32;
    constants_info_[12].device_type = cached_torch_device_type_cuda;
    constants_info_[12].offset = 0;
    constants_info_[12].data_size = 32768;
    constants_info_[12].from_folded = false;
    constants_info_[12].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[12].shape = {128, 64};
    constants_info_[12].stride = {64, 1};
    constants_info_[12].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[12].original_fqn = "layers.1.w3.weight";
    constants_info_[13].name = "layers_1_w2_weight";
    constants_info_[13].dtype = cached_torch_dtype_float32;
    constants_info_[13].device_type = cached_torch_device_type_cuda;
    constants_info_[13].offset = 0;
    constants_info_[13].data_size = 32768;
    constants_info_[13].from_folded = false;
    constants_info_[13].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[13].shape = {64, 128};
    constants_info_[13].stride = {128, 1};
    constants_info_[13].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[13].original_fqn = "layers.1.w2.weight";
    constants_info_[14].name = "lm_head_weight";
    constants_info_[14].dtype = cached_torch_dtype_float32;
    constants_info_[14].device_type = cached_torch_device_type_cuda;
    constants_info_[14].offset = 0;
    constants_info_[14].data_size = 65536;
    constants_info_[14].from_folded = false;
    constants_info_[14].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[14].shape = {256, 64};
    constants_info_[14].stride = {64, 1};
    constants_info_[14].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[14].original_fqn = "lm_head.weight";
    constants_info_[15].name = "embed_weight";
    constants_info_[15].dtype = cached_torch_dtype_float32;
    constants_info_[15].device_type = cached_torch_device_type_cuda;
    constants_info_[15].offset = 0;
    constants_info_[15].data_size = 65536;
    constants_info_[15].from_folded = false;
    constants_info_[15].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[15].shape = {256, 64};
    constants_info_[15].stride = {64, 1};
    constants_info_[15].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[15].original_fqn = "embed.weight";
    constants_info_[16].name = "layers_0_attn_norm_weight";
    constants_info_[16].dtype = cached_torch_dtype_float32;
    constants_info_[16].device_type = cached_torch_device_type_cuda;
    constants_info_[16].offset = 0;
    constants_info_[16].data_size = 256;
    constants_info_[16].from_folded = false;
    constants_info_[16].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[16].shape = {64};
    constants_info_[16].stride = {1};
    constants_info_[16].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[16].original_fqn = "layers.0.attn_norm.weight";
    constants_info_[17].name = "layers_0_mlp_norm_weight";
    constants_info_[17].dtype = cached_torch_dtype_float32;
    constants_info_[17].device_type = cached_torch_device_type_cuda;
    constants_info_[17].offset = 0;
    constants_info_[17].data_size = 256;
    constants_info_[17].from_folded = false;
    constants_info_[17].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[17].shape = {64};
    constants_info_[17].stride = {1};
    constants_info_[17].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[17].original_fqn = "layers.0.mlp_norm.weight";
    constants_info_[18].name = "layers_1_attn_norm_weight";
    constants_info_[18].dtype = cached_torch_dtype_float32;
    constants_info_[18].device_type = cached_torch_device_type_cuda;
    constants_info_[18].offset = 0;
    constants_info_[18].data_size = 256;
    constants_info_[18].from_folded = false;
    constants_info_[18].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[18].shape = {64};
    constants_info_[18].stride = {1};
    constants_info_[18].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[18].original_fqn = "layers.1.attn_norm.weight";
    constants_info_[19].name = "layers_1_mlp_norm_weight";
    constants_info_[19].dtype = cached_torch_dtype_float32;
    constants_info_[19].device_type = cached_torch_device_type_cuda;
    constants_info_[19].offset = 0;
    constants_info_[19].data_size = 256;
    constants_info_[19].from_folded = false;
    constants_info_[19].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[19].shape = {64};
    constants_info_[19].stride = {1};
    constants_info_[19].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[19].original_fqn = "layers.1.mlp_norm.weight";
    constants_info_[20].name = "norm_weight";
    constants_info_[20].dtype = cached_torch_dtype_float32;
    constants_info_[20].device_type = cached_torch_device_type_cuda;
    constants_info_[20].offset = 0;
    constants_info_[20].data_size = 256;
    constants_info_[20].from_folded = false;
    constants_info_[20].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Parameter);
    constants_info_[20].shape = {64};
    constants_info_[20].stride = {1};
    constants_info_[20].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[20].original_fqn = "norm.weight";
    constants_info_[21].name = "layers_0_k_cache";
    constants_info_[21].dtype = cached_torch_dtype_float32;
    constants_info_[21].device_type = cached_torch_device_type_cuda;
    constants_info_[21].offset = 0;
    constants_info_[21].data_size = 16384;
    constants_info_[21].from_folded = false;
    constants_info_[21].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[21].shape = {1, 4, 64, 16};
    constants_info_[21].stride = {4096, 1024, 16, 1};
    constants_info_[21].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[21].original_fqn = "layers.0.k_cache";
    constants_info_[22].name = "layers_0_v_cache";
    constants_info_[22].dtype = cached_torch_dtype_float32;
    constants_info_[22].device_type = cached_torch_device_type_cuda;
    constants_info_[22].offset = 0;
    constants_info_[22].data_size = 16384;
    constants_info_[22].from_folded = false;
    constants_info_[22].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[22].shape = {1, 4, 64, 16};
    constants_info_[22].stride = {4096, 1024, 16, 1};
    constants_info_[22].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[22].original_fqn = "layers.0.v_cache";
    constants_info_[23].name = "layers_1_k_cache";
    constants_info_[23].dtype = cached_torch_dtype_float32;
    constants_info_[23].device_type = cached_torch_device_type_cuda;
    constants_info_[23].offset = 0;
    constants_info_[23].data_size = 16384;
    constants_info_[23].from_folded = false;
    constants_info_[23].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[23].shape = {1, 4, 64, 16};
    constants_info_[23].stride = {4096, 1024, 16, 1};
    constants_info_[23].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[23].original_fqn = "layers.1.k_cache";
    constants_info_[24].name = "layers_1_v_cache";
    constants_info_[24].dtype = cached_torch_dtype_float32;
    constants_info_[24].device_type = cached_torch_device_type_cuda;
    constants_info_[24].offset = 0;
    constants_info_[24].data_size = 16384;
    constants_info_[24].from_folded = false;
    constants_info_[24].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::Buffer);
    constants_info_[24].shape = {1, 4, 64, 16};
    constants_info_[24].stride = {4096, 1024, 16, 1};
    constants_info_[24].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[24].original_fqn = "layers.1.v_cache";
    constants_info_[25].name = "_FOLDED_CONST_permute";
    constants_info_[25].dtype = cached_torch_dtype_float32;
    constants_info_[25].device_type = cached_torch_device_type_cuda;
    constants_info_[25].offset = 0;
    constants_info_[25].data_size = 16384;
    constants_info_[25].from_folded = true;
    constants_info_[25].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[25].shape = {64, 64};
    constants_info_[25].stride = {1, 64};
    constants_info_[25].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[25].original_fqn = "_FOLDED_CONST_permute";
    constants_info_[26].name = "_FOLDED_CONST_permute_2";
    constants_info_[26].dtype = cached_torch_dtype_float32;
    constants_info_[26].device_type = cached_torch_device_type_cuda;
    constants_info_[26].offset = 0;
    constants_info_[26].data_size = 16384;
    constants_info_[26].from_folded = true;
    constants_info_[26].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[26].shape = {64, 64};
    constants_info_[26].stride = {1, 64};
    constants_info_[26].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[26].original_fqn = "_FOLDED_CONST_permute_2";
    constants_info_[27].name = "_FOLDED_CONST_permute_4";
    constants_info_[27].dtype = cached_torch_dtype_float32;
    constants_info_[27].device_type = cached_torch_device_type_cuda;
    constants_info_[27].offset = 0;
    constants_info_[27].data_size = 16384;
    constants_info_[27].from_folded = true;
    constants_info_[27].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[27].shape = {64, 64};
    constants_info_[27].stride = {1, 64};
    constants_info_[27].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[27].original_fqn = "_FOLDED_CONST_permute_4";
    constants_info_[28].name = "_FOLDED_CONST_permute_11";
    constants_info_[28].dtype = cached_torch_dtype_float32;
    constants_info_[28].device_type = cached_torch_device_type_cuda;
    constants_info_[28].offset = 0;
    constants_info_[28].data_size = 16384;
    constants_info_[28].from_folded = true;
    constants_info_[28].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[28].shape = {64, 64};
    constants_info_[28].stride = {1, 64};
    constants_info_[28].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[28].original_fqn = "_FOLDED_CONST_permute_11";
    constants_info_[29].name = "_FOLDED_CONST_permute_12";
    constants_info_[29].dtype = cached_torch_dtype_float32;
    constants_info_[29].device_type = cached_torch_device_type_cuda;
    constants_info_[29].offset = 0;
    constants_info_[29].data_size = 32768;
    constants_info_[29].from_folded = true;
    constants_info_[29].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[29].shape = {64, 128};
    constants_info_[29].stride = {1, 64};
    constants_info_[29].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[29].original_fqn = "_FOLDED_CONST_permute_12";
    constants_info_[30].name = "_FOLDED_CONST_permute_13";
    constants_info_[30].dtype = cached_torch_dtype_float32;
    constants_info_[30].device_type = cached_torch_device_type_cuda;
    constants_info_[30].offset = 0;
    constants_info_[30].data_size = 32768;
    constants_info_[30].from_folded = true;
    constants_info_[30].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[30].shape = {64, 128};
    constants_info_[30].stride = {1, 64};
    constants_info_[30].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[30].original_fqn = "_FOLDED_CONST_permute_13";
    constants_info_[31].name = "_FOLDED_CONST_permute_14";
    constants_info_[31].dtype = cached_torch_dtype_float32;
    constants_info_[31].device_type = cached_torch_device_type_cuda;
    constants_info_[31].offset = 0;
    constants_info_[31].data_size = 32768;
    constants_info_[31].from_folded = true;
    constants_info_[31].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[31].shape = {128, 64};
    constants_info_[31].stride = {1, 128};
    constants_info_[31].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[31].original_fqn = "_FOLDED_CONST_permute_14";
    constants_info_[32].name = "_FOLDED_CONST_permute_15";
    constants_info_[32].dtype = cached_torch_dtype_float32;
    constants_info_[32].device_type = cached_torch_device_type_cuda;
    constants_info_[32].offset = 0;
    constants_info_[32].data_size = 16384;
    constants_info_[32].from_folded = true;
    constants_info_[32].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[32].shape = {64, 64};
    constants_info_[32].stride = {1, 64};
    constants_info_[32].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[32].original_fqn = "_FOLDED_CONST_permute_15";
    constants_info_[33].name = "_FOLDED_CONST_permute_17";
    constants_info_[33].dtype = cached_torch_dtype_float32;
    constants_info_[33].device_type = cached_torch_device_type_cuda;
    constants_info_[33].offset = 0;
    constants_info_[33].data_size = 16384;
    constants_info_[33].from_folded = true;
    constants_info_[33].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[33].shape = {64, 64};
    constants_info_[33].stride = {1, 64};
    constants_info_[33].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[33].original_fqn = "_FOLDED_CONST_permute_17";
    constants_info_[34].name = "_FOLDED_CONST_permute_19";
    constants_info_[34].dtype = cached_torch_dtype_float32;
    constants_info_[34].device_type = cached_torch_device_type_cuda;
    constants_info_[34].offset = 0;
    constants_info_[34].data_size = 16384;
    constants_info_[34].from_folded = true;
    constants_info_[34].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[34].shape = {64, 64};
    constants_info_[34].stride = {1, 64};
    constants_info_[34].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[34].original_fqn = "_FOLDED_CONST_permute_19";
    constants_info_[35].name = "_FOLDED_CONST_permute_26";
    constants_info_[35].dtype = cached_torch_dtype_float32;
    constants_info_[35].device_type = cached_torch_device_type_cuda;
    constants_info_[35].offset = 0;
    constants_info_[35].data_size = 16384;
    constants_info_[35].from_folded = true;
    constants_info_[35].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[35].shape = {64, 64};
    constants_info_[35].stride = {1, 64};
    constants_info_[35].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[35].original_fqn = "_FOLDED_CONST_permute_26";
    constants_info_[36].name = "_FOLDED_CONST_permute_27";
    constants_info_[36].dtype = cached_torch_dtype_float32;
    constants_info_[36].device_type = cached_torch_device_type_cuda;
    constants_info_[36].offset = 0;
    constants_info_[36].data_size = 32768;
    constants_info_[36].from_folded = true;
    constants_info_[36].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[36].shape = {64, 128};
    constants_info_[36].stride = {1, 64};
    constants_info_[36].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[36].original_fqn = "_FOLDED_CONST_permute_27";
    constants_info_[37].name = "_FOLDED_CONST_permute_28";
    constants_info_[37].dtype = cached_torch_dtype_float32;
    constants_info_[37].device_type = cached_torch_device_type_cuda;
    constants_info_[37].offset = 0;
    constants_info_[37].data_size = 32768;
    constants_info_[37].from_folded = true;
    constants_info_[37].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[37].shape = {64, 128};
    constants_info_[37].stride = {1, 64};
    constants_info_[37].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[37].original_fqn = "_FOLDED_CONST_permute_28";
    constants_info_[38].name = "_FOLDED_CONST_permute_29";
    constants_info_[38].dtype = cached_torch_dtype_float32;
    constants_info_[38].device_type = cached_torch_device_type_cuda;
    constants_info_[38].offset = 0;
    constants_info_[38].data_size = 32768;
    constants_info_[38].from_folded = true;
    constants_info_[38].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[38].shape = {128, 64};
    constants_info_[38].stride = {1, 128};
    constants_info_[38].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[38].original_fqn = "_FOLDED_CONST_permute_29";
    constants_info_[39].name = "_FOLDED_CONST_permute_30";
    constants_info_[39].dtype = cached_torch_dtype_float32;
    constants_info_[39].device_type = cached_torch_device_type_cuda;
    constants_info_[39].offset = 0;
    constants_info_[39].data_size = 65536;
    constants_info_[39].from_folded = true;
    constants_info_[39].type = static_cast<int32_t>(torch::aot_inductor::ConstantType::FoldedConstant);
    constants_info_[39].shape = {64, 256};
    constants_info_[39].stride = {1, 64};
    constants_info_[39].layout = static_cast<int32_t>(cached_torch_layout_strided);
    constants_info_[39].original_fqn = "_FOLDED_CONST_permute_30";
    update_constants_map(std::move(constants_map));
    update_constants_array(std::move(constants_array));
    in_spec_ = R"([1, {"type": "builtins.tuple", "context": "null", "children_spec": [{"type": "builtins.tuple", "context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": null, "context": null, "children_spec": []}]}, {"type": "builtins.dict", "context": "[]", "children_spec": []}]}])";
    out_spec_ = R"([1, {"type": null, "context": null, "children_spec": []}])";
    outputs_info_[0].name = "output0";
    this->kernels_ = std::make_unique<AOTInductorModelKernels>();
}

std::unordered_map<std::string, AtenTensorHandle> AOTInductorModel::const_run_impl(
    DeviceStreamType stream,
    AOTIProxyExecutorHandle proxy_executor,
    bool initialization
) {
    
                std::unordered_map<std::string, AtenTensorHandle> folded_constants_map;
                folded_constants_map.reserve(15);
                std::vector<AtenTensorHandle> output_handles(15);
                

    // The below assignment of output_handles to constants is not used directly.
    // It's only used to memo the correspondence of handle and constants.
    output_handles[0] = constants_->at(25);
    output_handles[1] = constants_->at(26);
    output_handles[2] = constants_->at(27);
    output_handles[3] = constants_->at(28);
    output_handles[4] = constants_->at(29);
    output_handles[5] = constants_->at(30);
    output_handles[6] = constants_->at(31);
    output_handles[7] = constants_->at(32);
    output_handles[8] = constants_->at(33);
    output_handles[9] = constants_->at(34);
    output_handles[10] = constants_->at(35);
    output_handles[11] = constants_->at(36);
    output_handles[12] = constants_->at(37);
    output_handles[13] = constants_->at(38);
    output_handles[14] = constants_->at(39);
    _const_run_impl(output_handles, stream, proxy_executor);
    folded_constants_map["_FOLDED_CONST_permute"] = output_handles[0];
    folded_constants_map["_FOLDED_CONST_permute_2"] = output_handles[1];
    folded_constants_map["_FOLDED_CONST_permute_4"] = output_handles[2];
    folded_constants_map["_FOLDED_CONST_permute_11"] = output_handles[3];
    folded_constants_map["_FOLDED_CONST_permute_12"] = output_handles[4];
    folded_constants_map["_FOLDED_CONST_permute_13"] = output_handles[5];
    folded_constants_map["_FOLDED_CONST_permute_14"] = output_handles[6];
    folded_constants_map["_FOLDED_CONST_permute_15"] = output_handles[7];
    folded_constants_map["_FOLDED_CONST_permute_17"] = output_handles[8];
    folded_constants_map["_FOLDED_CONST_permute_19"] = output_handles[9];
    folded_constants_map["_FOLDED_CONST_permute_26"] = output_handles[10];
    folded_constants_map["_FOLDED_CONST_permute_27"] = output_handles[11];
    folded_constants_map["_FOLDED_CONST_permute_28"] = output_handles[12];
    folded_constants_map["_FOLDED_CONST_permute_29"] = output_handles[13];
    folded_constants_map["_FOLDED_CONST_permute_30"] = output_handles[14];
    return folded_constants_map;
}
} // namespace torch::aot_inductor
using namespace torch::aot_inductor;

template <typename in_ptr0_type_, typename in_ptr1_type_, typename in_ptr2_type_, typename out_ptr1_type_, typename kernels_type_>
static inline void call_triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0(
    const in_ptr0_type_& in_ptr0,
    const in_ptr1_type_& in_ptr1,
    const in_ptr2_type_& in_ptr2,
    const out_ptr1_type_& out_ptr1,
    int64_t xnumel,
    int64_t r0_numel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.persistent_reduction(
        size_hints={'x': 8, 'r0_': 64},
        reduction_hint=ReductionHint.INNER,
        filename=__file__,
        triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'out_ptr1': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 64, 'r0_': 4352}}
    )
    @triton.jit
    def triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0(in_ptr0, in_ptr1, in_ptr2, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
        r0_numel = 64
        R0_BLOCK: tl.constexpr = 64
        rnumel = r0_numel
        RBLOCK: tl.constexpr = R0_BLOCK
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        r0_index = tl.arange(0, R0_BLOCK)[None, :]
        r0_offset = 0
        r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
        roffset = r0_offset
        rindex = r0_index
        x0 = xindex
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
        tmp18 = tl.load(in_ptr2 + (r0_1), None, eviction_policy='evict_last')
        tmp1 = tl.full([1, 1], 256, tl.int32)
        tmp2 = tmp0 + tmp1
        tmp3 = tmp0 < 0
        tmp4 = tl.where(tmp3, tmp2, tmp0)
        tl.device_assert(((0 <= tmp4) & (tmp4 < 256)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 256")
        tmp6 = tl.load(in_ptr1 + (r0_1 + 64*tmp4), xmask, other=0.0)
        tmp7 = tmp6 * tmp6
        tmp8 = tl.broadcast_to(tmp7, [XBLOCK, R0_BLOCK])
        tmp10 = tl.where(xmask, tmp8, 0)
        tmp11 = tl.sum(tmp10, 1)[:, None].to(tl.float32)
        tmp12 = tl.full([1, 1], 64.0, tl.float32)
        tmp13 = (tmp11 / tmp12)
        tmp14 = tl.full([1, 1], 1e-05, tl.float32)
        tmp15 = tmp13 + tmp14
        tmp16 = libdevice.rsqrt(tmp15)
        tmp17 = tmp6 * tmp16
        tmp19 = tmp17 * tmp18
        tl.store(out_ptr1 + (r0_1 + 64*x0), tmp19, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = xnumel;
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0 == nullptr) {
        kernels_.triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0 = loadKernel(__triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0_start, "triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0", 8); 
    }
    CUdeviceptr var_1 = reinterpret_cast<CUdeviceptr>(in_ptr0.data_ptr());
    CUdeviceptr var_2 = reinterpret_cast<CUdeviceptr>(in_ptr1.data_ptr());
    CUdeviceptr var_3 = reinterpret_cast<CUdeviceptr>(in_ptr2.data_ptr());
    CUdeviceptr var_4 = reinterpret_cast<CUdeviceptr>(out_ptr1.data_ptr());
    int32_t var_5 = xnumel;
    int32_t var_6 = r0_numel;
    CUdeviceptr global_scratch_scratch_7 = 0;
    CUdeviceptr profile_scratch_scratch_8 = 0;
    void* kernel_args_[] = {&var_1, &var_2, &var_3, &var_4, &var_5, &var_6, &global_scratch_scratch_7, &profile_scratch_scratch_8};
    launchKernel(kernels_.triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0, grid_0, grid_1, grid_2, 2, 8, kernel_args_, stream_);
}

template <typename arg_A_type_, typename arg_B_type_, typename out_ptr0_type_, typename kernels_type_>
static inline void call_triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1(
    const arg_A_type_& arg_A,
    const arg_B_type_& arg_B,
    const out_ptr0_type_& out_ptr0,
    int64_t ks0,
    int64_t _grid_0,
    int64_t _grid_1,
    int64_t _grid_2,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

    @triton_heuristics.template(

    num_stages=5,
    num_warps=4,
    triton_meta={'signature': {'arg_A': '*fp32', 'arg_B': '*fp32', 'out_ptr0': '*fp32', 'ks0': 'i32'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'kernel_name': 'triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1', 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'grid_type': 'FixedGrid', 'fixed_grid': ['_grid_0', '_grid_1', '_grid_2'], 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2'], 'config_args': {'EVEN_K': True, 'USE_FAST_ACCUM': False, 'ACC_TYPE': 'tl.float32', 'BLOCK_M': 16, 'BLOCK_N': 64, 'BLOCK_K': 64, 'GROUP_M': 8, 'ALLOW_TF32': False}},

    )
    @triton.jit
    def triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1(arg_A, arg_B, out_ptr0, ks0):
        EVEN_K : tl.constexpr = True
        USE_FAST_ACCUM : tl.constexpr = False
        ACC_TYPE : tl.constexpr = tl.float32
        BLOCK_M : tl.constexpr = 16
        BLOCK_N : tl.constexpr = 64
        BLOCK_K : tl.constexpr = 64
        GROUP_M : tl.constexpr = 8
        ALLOW_TF32 : tl.constexpr = False
        INDEX_DTYPE : tl.constexpr = tl.int32
        A = arg_A
        B = arg_B

        M = ks0
        N = 64
        K = 64
        if M * N == 0:
            # early exit due to zero-size input(s)
            return
        stride_am = 64
        stride_ak = 1
        stride_bk = 1
        stride_bn = 64

        # based on triton.ops.matmul
        pid = tl.program_id(0).to(INDEX_DTYPE)
        grid_m = (M + BLOCK_M - 1) // BLOCK_M
        grid_n = (N + BLOCK_N - 1) // BLOCK_N

        # re-order program ID for better L2 performance
        width = GROUP_M * grid_n
        group_id = pid // width
        group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
        pid_m = group_id * GROUP_M + (pid % group_size)
        pid_n = (pid % width) // (group_size)
        tl.assume(pid_m >= 0)
        tl.assume(pid_n >= 0)

        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if ((stride_am == 1 and stride_ak == M) or (stride_am == K and stride_ak == 1)) and (M >= BLOCK_M and K > 1):
            offs_a_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
        else:
            offs_a_m = rm % M
        if ((stride_bk == 1 and stride_bn == K) or (stride_bk == N and stride_bn == 1)) and (N >= BLOCK_N and K > 1):
            offs_b_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
        else:
            offs_b_n = rn % N
        offs_k = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)

        for k_idx in range(0, tl.cdiv(K, BLOCK_K)):

            a_k_idx_vals = offs_k[None, :] + (k_idx * BLOCK_K)
            b_k_idx_vals = offs_k[:, None] + (k_idx * BLOCK_K)

            idx_m = offs_a_m[:, None]
            idx_n = a_k_idx_vals
            xindex = idx_n + 64*idx_m
            a = tl.load(A + (xindex))

            idx_m = b_k_idx_vals
            idx_n = offs_b_n[None, :]
            xindex = idx_n + 64*idx_m
            b = tl.load(B + ((tl.broadcast_to(idx_m + 64*idx_n, [BLOCK_K, BLOCK_N])).broadcast_to(xindex.shape)))


            acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)


        # rematerialize rm and rn to save registers
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        idx_m = rm[:, None]
        idx_n = rn[None, :]
        mask = (idx_m < M) & (idx_n < N)

        # inductor generates a suffix
        xindex = idx_n + 64*idx_m
        tl.store(out_ptr0 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), acc, mask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = _grid_0;
    uint32_t grid_1 = _grid_1;
    uint32_t grid_2 = _grid_2;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1 == nullptr) {
        kernels_.triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1 = loadKernel(__triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1_start, "triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1", 20480); 
    }
    CUdeviceptr var_9 = reinterpret_cast<CUdeviceptr>(arg_A.data_ptr());
    CUdeviceptr var_10 = reinterpret_cast<CUdeviceptr>(arg_B.data_ptr());
    CUdeviceptr var_11 = reinterpret_cast<CUdeviceptr>(out_ptr0.data_ptr());
    int32_t var_12 = ks0;
    CUdeviceptr global_scratch_scratch_13 = 0;
    CUdeviceptr profile_scratch_scratch_14 = 0;
    void* kernel_args_[] = {&var_9, &var_10, &var_11, &var_12, &global_scratch_scratch_13, &profile_scratch_scratch_14};
    launchKernel(kernels_.triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1, grid_0, grid_1, grid_2, 4, 20480, kernel_args_, stream_);
}

template <typename in_ptr0_type_, typename in_ptr1_type_, typename in_ptr2_type_, typename out_ptr0_type_, typename out_ptr1_type_, typename kernels_type_>
static inline void call_triton_poi_fused__unsafe_view_index_copy_transpose_view_2(
    const in_ptr0_type_& in_ptr0,
    const in_ptr1_type_& in_ptr1,
    const in_ptr2_type_& in_ptr2,
    const out_ptr0_type_& out_ptr0,
    const out_ptr1_type_& out_ptr1,
    int64_t xnumel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_poi_fused__unsafe_view_index_copy_transpose_view_2', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.pointwise(
        size_hints={'x': 512}, 
        filename=__file__,
        triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'out_ptr0': '*fp32', 'out_ptr1': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused__unsafe_view_index_copy_transpose_view_2', 'mutated_arg_names': ['out_ptr0', 'out_ptr1'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 3, 'num_store': 2, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 4096}},
        min_elem_per_thread=0
    )
    @triton.jit
    def triton_poi_fused__unsafe_view_index_copy_transpose_view_2(in_ptr0, in_ptr1, in_ptr2, out_ptr0, out_ptr1, xnumel, XBLOCK : tl.constexpr):
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:]
        xmask = xindex < xnumel
        x2 = xindex // 64
        x3 = xindex
        x0 = (xindex % 16)
        x1 = ((xindex // 16) % 4)
        tmp0 = tl.load(in_ptr0 + (x2), xmask, eviction_policy='evict_last')
        tmp6 = tl.load(in_ptr1 + (x3), xmask)
        tmp7 = tl.load(in_ptr2 + (x3), xmask)
        tmp1 = tl.full([XBLOCK], 64, tl.int32)
        tmp2 = tmp0 + tmp1
        tmp3 = tmp0 < 0
        tmp4 = tl.where(tmp3, tmp2, tmp0)
        tl.device_assert(((0 <= tmp4) & (tmp4 < 64)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 64")
        tl.store(out_ptr0 + (x0 + 16*tmp4 + 1024*x1), tmp6, xmask)
        tl.store(out_ptr1 + (x0 + 16*tmp4 + 1024*x1), tmp7, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = ((xnumel + (128 - 1)) / (128));
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_poi_fused__unsafe_view_index_copy_transpose_view_2 == nullptr) {
        kernels_.triton_poi_fused__unsafe_view_index_copy_transpose_view_2 = loadKernel(__triton_poi_fused__unsafe_view_index_copy_transpose_view_2_start, "triton_poi_fused__unsafe_view_index_copy_transpose_view_2", 0); 
    }
    CUdeviceptr var_15 = reinterpret_cast<CUdeviceptr>(in_ptr0.data_ptr());
    CUdeviceptr var_16 = reinterpret_cast<CUdeviceptr>(in_ptr1.data_ptr());
    CUdeviceptr var_17 = reinterpret_cast<CUdeviceptr>(in_ptr2.data_ptr());
    CUdeviceptr var_18 = reinterpret_cast<CUdeviceptr>(out_ptr0.data_ptr());
    CUdeviceptr var_19 = reinterpret_cast<CUdeviceptr>(out_ptr1.data_ptr());
    int32_t var_20 = xnumel;
    CUdeviceptr global_scratch_scratch_21 = 0;
    CUdeviceptr profile_scratch_scratch_22 = 0;
    void* kernel_args_[] = {&var_15, &var_16, &var_17, &var_18, &var_19, &var_20, &global_scratch_scratch_21, &profile_scratch_scratch_22};
    launchKernel(kernels_.triton_poi_fused__unsafe_view_index_copy_transpose_view_2, grid_0, grid_1, grid_2, 4, 0, kernel_args_, stream_);
}

template <typename arg_A_type_, typename arg_B_type_, typename out_ptr0_type_, typename kernels_type_>
static inline void call_triton_tem_fused__unsafe_view_bmm_transpose_view_3(
    const arg_A_type_& arg_A,
    const arg_B_type_& arg_B,
    const out_ptr0_type_& out_ptr0,
    int64_t ks0,
    int64_t _grid_0,
    int64_t _grid_1,
    int64_t _grid_2,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_tem_fused__unsafe_view_bmm_transpose_view_3', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

    @triton_heuristics.template(

    num_stages=5,
    num_warps=2,
    triton_meta={'signature': {'arg_A': '*fp32', 'arg_B': '*fp32', 'out_ptr0': '*fp32', 'ks0': 'i32'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'kernel_name': 'triton_tem_fused__unsafe_view_bmm_transpose_view_3', 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'grid_type': 'FixedGrid', 'fixed_grid': ['_grid_0', '_grid_1', '_grid_2'], 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2'], 'config_args': {'EVEN_K': True, 'USE_FAST_ACCUM': False, 'ACC_TYPE': 'tl.float32', 'BLOCK_M': 16, 'BLOCK_N': 32, 'BLOCK_K': 16, 'GROUP_M': 8, 'ALLOW_TF32': False}},

    )
    @triton.jit
    def triton_tem_fused__unsafe_view_bmm_transpose_view_3(arg_A, arg_B, out_ptr0, ks0):
        EVEN_K : tl.constexpr = True
        USE_FAST_ACCUM : tl.constexpr = False
        ACC_TYPE : tl.constexpr = tl.float32
        BLOCK_M : tl.constexpr = 16
        BLOCK_N : tl.constexpr = 32
        BLOCK_K : tl.constexpr = 16
        GROUP_M : tl.constexpr = 8
        ALLOW_TF32 : tl.constexpr = False
        INDEX_DTYPE : tl.constexpr = tl.int32
        A = arg_A
        B = arg_B

        M = ks0
        N = 64
        K = 16

        stride_aq = 16
        stride_am = 64
        stride_ak = 1

        stride_bq = 1024
        stride_bk = 1
        stride_bn = 16

        # based on triton.ops.matmul
        pid = tl.program_id(0).to(INDEX_DTYPE)
        grid_m = (M + BLOCK_M - 1) // BLOCK_M
        grid_n = (N + BLOCK_N - 1) // BLOCK_N

        # re-order program ID for better L2 performance
        width = GROUP_M * grid_n
        group_id = pid // width
        group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
        pid_m = group_id * GROUP_M + (pid % group_size)
        pid_n = (pid % width) // (group_size)
        tl.assume(pid_m >= 0)
        tl.assume(pid_n >= 0)

        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if (stride_am == 1 and stride_ak == M) or (stride_am == K and stride_ak == 1):
            ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
        else:
            ram = rm % M
        if (stride_bk == 1 and stride_bn == K) or (stride_bk == N and stride_bn == 1):
            rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
        else:
            rbn = rn % N

        rk = tl.arange(0, BLOCK_K)

        idx_q = tl.program_id(1).to(INDEX_DTYPE)  # batch dimension for BMM
        A = A + (ram[:, None] * stride_am + rk[None, :] * stride_ak + idx_q*stride_aq)
        B = B + (rk[:, None] * stride_bk + rbn[None, :] * stride_bn + idx_q*stride_bq)

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
        for k in range(K, 0, -BLOCK_K):
            if EVEN_K:
                a = tl.load(A)
                b = tl.load(B)
            else:
                a = tl.load(A, mask=rk[None, :] < k, other=0.)
                b = tl.load(B, mask=rk[:, None] < k, other=0.)
            acc += tl.dot(a, b, allow_tf32=ALLOW_TF32)
            A += BLOCK_K * stride_ak
            B += BLOCK_K * stride_bk

        # rematerialize rm and rn to save registers
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        idx_q = tl.program_id(1).to(INDEX_DTYPE)  # batch dimension for BMM
        idx_m = rm[:, None]
        idx_n = rn[None, :]
        mask = (idx_m < M) & (idx_n < N)

        # inductor generates a suffix
        xindex = idx_n + 64*idx_m + 64*idx_q*ks0
        tl.store(out_ptr0 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), acc, mask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = _grid_0;
    uint32_t grid_1 = _grid_1;
    uint32_t grid_2 = _grid_2;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_tem_fused__unsafe_view_bmm_transpose_view_3 == nullptr) {
        kernels_.triton_tem_fused__unsafe_view_bmm_transpose_view_3 = loadKernel(__triton_tem_fused__unsafe_view_bmm_transpose_view_3_start, "triton_tem_fused__unsafe_view_bmm_transpose_view_3", 3072); 
    }
    CUdeviceptr var_23 = reinterpret_cast<CUdeviceptr>(arg_A.data_ptr());
    CUdeviceptr var_24 = reinterpret_cast<CUdeviceptr>(arg_B.data_ptr());
    CUdeviceptr var_25 = reinterpret_cast<CUdeviceptr>(out_ptr0.data_ptr());
    int32_t var_26 = ks0;
    CUdeviceptr global_scratch_scratch_27 = 0;
    CUdeviceptr profile_scratch_scratch_28 = 0;
    void* kernel_args_[] = {&var_23, &var_24, &var_25, &var_26, &global_scratch_scratch_27, &profile_scratch_scratch_28};
    launchKernel(kernels_.triton_tem_fused__unsafe_view_bmm_transpose_view_3, grid_0, grid_1, grid_2, 2, 3072, kernel_args_, stream_);
}

template <typename in_out_ptr0_type_, typename in_ptr0_type_, typename kernels_type_>
static inline void call_triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4(
    const in_out_ptr0_type_& in_out_ptr0,
    const in_ptr0_type_& in_ptr0,
    int64_t ks0,
    int64_t xnumel,
    int64_t r0_numel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.persistent_reduction(
        size_hints={'x': 32, 'r0_': 64},
        reduction_hint=ReductionHint.INNER,
        filename=__file__,
        triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*i64', 'ks0': 'i64', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 4, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 64, 'r0_': 24576}}
    )
    @triton.jit
    def triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4(in_out_ptr0, in_ptr0, ks0, xnumel, r0_numel, XBLOCK : tl.constexpr):
        r0_numel = 64
        R0_BLOCK: tl.constexpr = 64
        rnumel = r0_numel
        RBLOCK: tl.constexpr = R0_BLOCK
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        r0_index = tl.arange(0, R0_BLOCK)[None, :]
        r0_offset = 0
        r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
        roffset = r0_offset
        rindex = r0_index
        x0 = (xindex % ks0)
        r0_2 = r0_index
        x3 = xindex
        tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
        tmp4 = tl.load(in_out_ptr0 + (r0_2 + 64*x3), xmask, other=0.0)
        tmp1 = r0_2
        tmp2 = tmp1 <= tmp0
        tmp3 = tmp2 == 0
        tmp5 = tl.full([1, 1], 0.25, tl.float32)
        tmp6 = tmp4 * tmp5
        tmp7 = tl.full([1, 1], float("-inf"), tl.float32)
        tmp8 = tl.where(tmp3, tmp7, tmp6)
        tmp9 = tl.broadcast_to(tmp8, [XBLOCK, R0_BLOCK])
        tmp11 = tl.broadcast_to(tmp9, [XBLOCK, R0_BLOCK])
        tmp13 = tl.where(xmask, tmp11, float("-inf"))
        tmp14 = triton_helpers.max2(tmp13, 1)[:, None].to(tl.float32)
        tmp15 = tmp9 - tmp14
        tmp16 = libdevice.exp(tmp15)
        tmp17 = tl.broadcast_to(tmp16, [XBLOCK, R0_BLOCK])
        tmp19 = tl.where(xmask, tmp17, 0)
        tmp20 = tl.sum(tmp19, 1)[:, None].to(tl.float32)
        tmp21 = tmp8 - tmp14
        tmp22 = libdevice.exp(tmp21)
        tmp23 = (tmp22 / tmp20)
        tl.store(in_out_ptr0 + (r0_2 + 64*x3), tmp23, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = ((xnumel + (8 - 1)) / (8));
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4 == nullptr) {
        kernels_.triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4 = loadKernel(__triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4_start, "triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4", 0); 
    }
    CUdeviceptr var_29 = reinterpret_cast<CUdeviceptr>(in_out_ptr0.data_ptr());
    CUdeviceptr var_30 = reinterpret_cast<CUdeviceptr>(in_ptr0.data_ptr());
    int64_t var_31 = ks0;
    int32_t var_32 = xnumel;
    int32_t var_33 = r0_numel;
    CUdeviceptr global_scratch_scratch_34 = 0;
    CUdeviceptr profile_scratch_scratch_35 = 0;
    void* kernel_args_[] = {&var_29, &var_30, &var_31, &var_32, &var_33, &global_scratch_scratch_34, &profile_scratch_scratch_35};
    launchKernel(kernels_.triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4, grid_0, grid_1, grid_2, 2, 0, kernel_args_, stream_);
}

template <typename arg_A_type_, typename arg_B_type_, typename out_ptr0_type_, typename kernels_type_>
static inline void call_triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5(
    const arg_A_type_& arg_A,
    const arg_B_type_& arg_B,
    const out_ptr0_type_& out_ptr0,
    int64_t ks0,
    int64_t _grid_0,
    int64_t _grid_1,
    int64_t _grid_2,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

    @triton_heuristics.template(

    num_stages=4,
    num_warps=1,
    triton_meta={'signature': {'arg_A': '*fp32', 'arg_B': '*fp32', 'out_ptr0': '*fp32', 'ks0': 'i32'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'kernel_name': 'triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5', 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'grid_type': 'FixedGrid', 'fixed_grid': ['_grid_0', '_grid_1', '_grid_2'], 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2'], 'config_args': {'EVEN_K': True, 'USE_FAST_ACCUM': False, 'ACC_TYPE': 'tl.float32', 'BLOCK_M': 16, 'BLOCK_N': 16, 'BLOCK_K': 64, 'GROUP_M': 8, 'ALLOW_TF32': False}},

    )
    @triton.jit
    def triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5(arg_A, arg_B, out_ptr0, ks0):
        EVEN_K : tl.constexpr = True
        USE_FAST_ACCUM : tl.constexpr = False
        ACC_TYPE : tl.constexpr = tl.float32
        BLOCK_M : tl.constexpr = 16
        BLOCK_N : tl.constexpr = 16
        BLOCK_K : tl.constexpr = 64
        GROUP_M : tl.constexpr = 8
        ALLOW_TF32 : tl.constexpr = False
        INDEX_DTYPE : tl.constexpr = tl.int32
        A = arg_A
        B = arg_B

        M = ks0
        N = 16
        K = 64

        stride_aq = 64*ks0
        stride_am = 64
        stride_ak = 1

        stride_bq = 1024
        stride_bk = 16
        stride_bn = 1

        # based on triton.ops.matmul
        pid = tl.program_id(0).to(INDEX_DTYPE)
        grid_m = (M + BLOCK_M - 1) // BLOCK_M
        grid_n = (N + BLOCK_N - 1) // BLOCK_N

        # re-order program ID for better L2 performance
        width = GROUP_M * grid_n
        group_id = pid // width
        group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
        pid_m = group_id * GROUP_M + (pid % group_size)
        pid_n = (pid % width) // (group_size)
        tl.assume(pid_m >= 0)
        tl.assume(pid_n >= 0)

        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if (stride_am == 1 and stride_ak == M) or (stride_am == K and stride_ak == 1):
            ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
        else:
            ram = rm % M
        if (stride_bk == 1 and stride_bn == K) or (stride_bk == N and stride_bn == 1):
            rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
        else:
            rbn = rn % N

        rk = tl.arange(0, BLOCK_K)

        idx_q = tl.program_id(1).to(INDEX_DTYPE)  # batch dimension for BMM
        A = A + (ram[:, None] * stride_am + rk[None, :] * stride_ak + idx_q*stride_aq)
        B = B + (rk[:, None] * stride_bk + rbn[None, :] * stride_bn + idx_q*stride_bq)

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
        for k in range(K, 0, -BLOCK_K):
            if EVEN_K:
                a = tl.load(A)
                b = tl.load(B)
            else:
                a = tl.load(A, mask=rk[None, :] < k, other=0.)
                b = tl.load(B, mask=rk[:, None] < k, other=0.)
            acc += tl.dot(a, b, allow_tf32=ALLOW_TF32)
            A += BLOCK_K * stride_ak
            B += BLOCK_K * stride_bk

        # rematerialize rm and rn to save registers
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        idx_q = tl.program_id(1).to(INDEX_DTYPE)  # batch dimension for BMM
        idx_m = rm[:, None]
        idx_n = rn[None, :]
        mask = (idx_m < M) & (idx_n < N)

        # inductor generates a suffix
        xindex = idx_n + 16*idx_m + 16*idx_q*ks0
        tl.store(out_ptr0 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), acc, mask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = _grid_0;
    uint32_t grid_1 = _grid_1;
    uint32_t grid_2 = _grid_2;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5 == nullptr) {
        kernels_.triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5 = loadKernel(__triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5_start, "triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5", 8192); 
    }
    CUdeviceptr var_36 = reinterpret_cast<CUdeviceptr>(arg_A.data_ptr());
    CUdeviceptr var_37 = reinterpret_cast<CUdeviceptr>(arg_B.data_ptr());
    CUdeviceptr var_38 = reinterpret_cast<CUdeviceptr>(out_ptr0.data_ptr());
    int32_t var_39 = ks0;
    CUdeviceptr global_scratch_scratch_40 = 0;
    CUdeviceptr profile_scratch_scratch_41 = 0;
    void* kernel_args_[] = {&var_36, &var_37, &var_38, &var_39, &global_scratch_scratch_40, &profile_scratch_scratch_41};
    launchKernel(kernels_.triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5, grid_0, grid_1, grid_2, 1, 8192, kernel_args_, stream_);
}

template <typename in_ptr0_type_, typename out_ptr0_type_, typename kernels_type_>
static inline void call_triton_poi_fused_clone_transpose_view_6(
    const in_ptr0_type_& in_ptr0,
    const out_ptr0_type_& out_ptr0,
    int64_t ks0,
    int64_t xnumel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_poi_fused_clone_transpose_view_6', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.pointwise(
        size_hints={'x': 512}, 
        filename=__file__,
        triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'ks0': 'i64', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_clone_transpose_view_6', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 6144}},
        min_elem_per_thread=0
    )
    @triton.jit
    def triton_poi_fused_clone_transpose_view_6(in_ptr0, out_ptr0, ks0, xnumel, XBLOCK : tl.constexpr):
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:]
        xmask = xindex < xnumel
        x0 = (xindex % 16)
        x1 = ((xindex // 16) % 4)
        x2 = xindex // 64
        x3 = xindex
        tmp0 = tl.load(in_ptr0 + (x0 + 16*x2 + 16*ks0*x1), xmask)
        tl.store(out_ptr0 + (x3), tmp0, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = ((xnumel + (256 - 1)) / (256));
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_poi_fused_clone_transpose_view_6 == nullptr) {
        kernels_.triton_poi_fused_clone_transpose_view_6 = loadKernel(__triton_poi_fused_clone_transpose_view_6_start, "triton_poi_fused_clone_transpose_view_6", 0); 
    }
    CUdeviceptr var_42 = reinterpret_cast<CUdeviceptr>(in_ptr0.data_ptr());
    CUdeviceptr var_43 = reinterpret_cast<CUdeviceptr>(out_ptr0.data_ptr());
    int64_t var_44 = ks0;
    int32_t var_45 = xnumel;
    CUdeviceptr global_scratch_scratch_46 = 0;
    CUdeviceptr profile_scratch_scratch_47 = 0;
    void* kernel_args_[] = {&var_42, &var_43, &var_44, &var_45, &global_scratch_scratch_46, &profile_scratch_scratch_47};
    launchKernel(kernels_.triton_poi_fused_clone_transpose_view_6, grid_0, grid_1, grid_2, 4, 0, kernel_args_, stream_);
}

template <typename in_ptr0_type_, typename in_ptr1_type_, typename in_ptr2_type_, typename in_ptr3_type_, typename out_ptr1_type_, typename kernels_type_>
static inline void call_triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7(
    const in_ptr0_type_& in_ptr0,
    const in_ptr1_type_& in_ptr1,
    const in_ptr2_type_& in_ptr2,
    const in_ptr3_type_& in_ptr3,
    const out_ptr1_type_& out_ptr1,
    int64_t xnumel,
    int64_t r0_numel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.persistent_reduction(
        size_hints={'x': 8, 'r0_': 64},
        reduction_hint=ReductionHint.INNER,
        filename=__file__,
        triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'in_ptr3': '*fp32', 'out_ptr1': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 3, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 64, 'r0_': 6400}}
    )
    @triton.jit
    def triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7(in_ptr0, in_ptr1, in_ptr2, in_ptr3, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
        r0_numel = 64
        R0_BLOCK: tl.constexpr = 64
        rnumel = r0_numel
        RBLOCK: tl.constexpr = R0_BLOCK
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        r0_index = tl.arange(0, R0_BLOCK)[None, :]
        r0_offset = 0
        r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
        roffset = r0_offset
        rindex = r0_index
        x0 = xindex
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
        tmp7 = tl.load(in_ptr2 + (r0_1 + 64*x0), xmask, other=0.0)
        tmp20 = tl.load(in_ptr3 + (r0_1), None, eviction_policy='evict_last')
        tmp1 = tl.full([1, 1], 256, tl.int32)
        tmp2 = tmp0 + tmp1
        tmp3 = tmp0 < 0
        tmp4 = tl.where(tmp3, tmp2, tmp0)
        tl.device_assert(((0 <= tmp4) & (tmp4 < 256)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 256")
        tmp6 = tl.load(in_ptr1 + (r0_1 + 64*tmp4), xmask, other=0.0)
        tmp8 = tmp6 + tmp7
        tmp9 = tmp8 * tmp8
        tmp10 = tl.broadcast_to(tmp9, [XBLOCK, R0_BLOCK])
        tmp12 = tl.where(xmask, tmp10, 0)
        tmp13 = tl.sum(tmp12, 1)[:, None].to(tl.float32)
        tmp14 = tl.full([1, 1], 64.0, tl.float32)
        tmp15 = (tmp13 / tmp14)
        tmp16 = tl.full([1, 1], 1e-05, tl.float32)
        tmp17 = tmp15 + tmp16
        tmp18 = libdevice.rsqrt(tmp17)
        tmp19 = tmp8 * tmp18
        tmp21 = tmp19 * tmp20
        tl.store(out_ptr1 + (r0_1 + 64*x0), tmp21, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = ((xnumel + (8 - 1)) / (8));
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7 == nullptr) {
        kernels_.triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7 = loadKernel(__triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7_start, "triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7", 256); 
    }
    CUdeviceptr var_48 = reinterpret_cast<CUdeviceptr>(in_ptr0.data_ptr());
    CUdeviceptr var_49 = reinterpret_cast<CUdeviceptr>(in_ptr1.data_ptr());
    CUdeviceptr var_50 = reinterpret_cast<CUdeviceptr>(in_ptr2.data_ptr());
    CUdeviceptr var_51 = reinterpret_cast<CUdeviceptr>(in_ptr3.data_ptr());
    CUdeviceptr var_52 = reinterpret_cast<CUdeviceptr>(out_ptr1.data_ptr());
    int32_t var_53 = xnumel;
    int32_t var_54 = r0_numel;
    CUdeviceptr global_scratch_scratch_55 = 0;
    CUdeviceptr profile_scratch_scratch_56 = 0;
    void* kernel_args_[] = {&var_48, &var_49, &var_50, &var_51, &var_52, &var_53, &var_54, &global_scratch_scratch_55, &profile_scratch_scratch_56};
    launchKernel(kernels_.triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7, grid_0, grid_1, grid_2, 2, 256, kernel_args_, stream_);
}

template <typename arg_A_type_, typename arg_B_type_, typename out_ptr0_type_, typename kernels_type_>
static inline void call_triton_tem_fused_mm_view_8(
    const arg_A_type_& arg_A,
    const arg_B_type_& arg_B,
    const out_ptr0_type_& out_ptr0,
    int64_t ks0,
    int64_t _grid_0,
    int64_t _grid_1,
    int64_t _grid_2,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_tem_fused_mm_view_8', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

    @triton_heuristics.template(

    num_stages=5,
    num_warps=2,
    triton_meta={'signature': {'arg_A': '*fp32', 'arg_B': '*fp32', 'out_ptr0': '*fp32', 'ks0': 'i32'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'kernel_name': 'triton_tem_fused_mm_view_8', 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'grid_type': 'FixedGrid', 'fixed_grid': ['_grid_0', '_grid_1', '_grid_2'], 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2'], 'config_args': {'EVEN_K': True, 'USE_FAST_ACCUM': False, 'ACC_TYPE': 'tl.float32', 'BLOCK_M': 16, 'BLOCK_N': 32, 'BLOCK_K': 64, 'GROUP_M': 8, 'ALLOW_TF32': False}},

    )
    @triton.jit
    def triton_tem_fused_mm_view_8(arg_A, arg_B, out_ptr0, ks0):
        EVEN_K : tl.constexpr = True
        USE_FAST_ACCUM : tl.constexpr = False
        ACC_TYPE : tl.constexpr = tl.float32
        BLOCK_M : tl.constexpr = 16
        BLOCK_N : tl.constexpr = 32
        BLOCK_K : tl.constexpr = 64
        GROUP_M : tl.constexpr = 8
        ALLOW_TF32 : tl.constexpr = False
        INDEX_DTYPE : tl.constexpr = tl.int32
        A = arg_A
        B = arg_B

        M = ks0
        N = 128
        K = 64
        if M * N == 0:
            # early exit due to zero-size input(s)
            return
        stride_am = 64
        stride_ak = 1
        stride_bk = 1
        stride_bn = 64

        # based on triton.ops.matmul
        pid = tl.program_id(0).to(INDEX_DTYPE)
        grid_m = (M + BLOCK_M - 1) // BLOCK_M
        grid_n = (N + BLOCK_N - 1) // BLOCK_N

        # re-order program ID for better L2 performance
        width = GROUP_M * grid_n
        group_id = pid // width
        group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
        pid_m = group_id * GROUP_M + (pid % group_size)
        pid_n = (pid % width) // (group_size)
        tl.assume(pid_m >= 0)
        tl.assume(pid_n >= 0)

        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if ((stride_am == 1 and stride_ak == M) or (stride_am == K and stride_ak == 1)) and (M >= BLOCK_M and K > 1):
            offs_a_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
        else:
            offs_a_m = rm % M
        if ((stride_bk == 1 and stride_bn == K) or (stride_bk == N and stride_bn == 1)) and (N >= BLOCK_N and K > 1):
            offs_b_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
        else:
            offs_b_n = rn % N
        offs_k = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)

        for k_idx in range(0, tl.cdiv(K, BLOCK_K)):

            a_k_idx_vals = offs_k[None, :] + (k_idx * BLOCK_K)
            b_k_idx_vals = offs_k[:, None] + (k_idx * BLOCK_K)

            idx_m = offs_a_m[:, None]
            idx_n = a_k_idx_vals
            xindex = idx_n + 64*idx_m
            a = tl.load(A + (xindex))

            idx_m = b_k_idx_vals
            idx_n = offs_b_n[None, :]
            xindex = idx_n + 128*idx_m
            b = tl.load(B + ((tl.broadcast_to(idx_m + 64*idx_n, [BLOCK_K, BLOCK_N])).broadcast_to(xindex.shape)))


            acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)


        # rematerialize rm and rn to save registers
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        idx_m = rm[:, None]
        idx_n = rn[None, :]
        mask = (idx_m < M) & (idx_n < N)

        # inductor generates a suffix
        xindex = idx_n + 128*idx_m
        tl.store(out_ptr0 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), acc, mask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = _grid_0;
    uint32_t grid_1 = _grid_1;
    uint32_t grid_2 = _grid_2;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_tem_fused_mm_view_8 == nullptr) {
        kernels_.triton_tem_fused_mm_view_8 = loadKernel(__triton_tem_fused_mm_view_8_start, "triton_tem_fused_mm_view_8", 12288); 
    }
    CUdeviceptr var_57 = reinterpret_cast<CUdeviceptr>(arg_A.data_ptr());
    CUdeviceptr var_58 = reinterpret_cast<CUdeviceptr>(arg_B.data_ptr());
    CUdeviceptr var_59 = reinterpret_cast<CUdeviceptr>(out_ptr0.data_ptr());
    int32_t var_60 = ks0;
    CUdeviceptr global_scratch_scratch_61 = 0;
    CUdeviceptr profile_scratch_scratch_62 = 0;
    void* kernel_args_[] = {&var_57, &var_58, &var_59, &var_60, &global_scratch_scratch_61, &profile_scratch_scratch_62};
    launchKernel(kernels_.triton_tem_fused_mm_view_8, grid_0, grid_1, grid_2, 2, 12288, kernel_args_, stream_);
}

template <typename arg_A_type_, typename arg_B_type_, typename in_ptr2_type_, typename out_ptr1_type_, typename kernels_type_>
static inline void call_triton_tem_fused__unsafe_view_mm_mul_silu_view_9(
    const arg_A_type_& arg_A,
    const arg_B_type_& arg_B,
    const in_ptr2_type_& in_ptr2,
    const out_ptr1_type_& out_ptr1,
    int64_t ks0,
    int64_t _grid_0,
    int64_t _grid_1,
    int64_t _grid_2,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_tem_fused__unsafe_view_mm_mul_silu_view_9', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

    @triton_heuristics.template(

    num_stages=5,
    num_warps=2,
    triton_meta={'signature': {'arg_A': '*fp32', 'arg_B': '*fp32', 'in_ptr2': '*fp32', 'out_ptr1': '*fp32', 'ks0': 'i32'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'kernel_name': 'triton_tem_fused__unsafe_view_mm_mul_silu_view_9', 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'grid_type': 'FixedGrid', 'fixed_grid': ['_grid_0', '_grid_1', '_grid_2'], 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2'], 'config_args': {'EVEN_K': True, 'USE_FAST_ACCUM': False, 'ACC_TYPE': 'tl.float32', 'BLOCK_M': 16, 'BLOCK_N': 32, 'BLOCK_K': 64, 'GROUP_M': 8, 'ALLOW_TF32': False}},

    )
    @triton.jit
    def triton_tem_fused__unsafe_view_mm_mul_silu_view_9(arg_A, arg_B, in_ptr2, out_ptr1, ks0):
        EVEN_K : tl.constexpr = True
        USE_FAST_ACCUM : tl.constexpr = False
        ACC_TYPE : tl.constexpr = tl.float32
        BLOCK_M : tl.constexpr = 16
        BLOCK_N : tl.constexpr = 32
        BLOCK_K : tl.constexpr = 64
        GROUP_M : tl.constexpr = 8
        ALLOW_TF32 : tl.constexpr = False
        INDEX_DTYPE : tl.constexpr = tl.int32
        A = arg_A
        B = arg_B

        M = ks0
        N = 128
        K = 64
        if M * N == 0:
            # early exit due to zero-size input(s)
            return
        stride_am = 64
        stride_ak = 1
        stride_bk = 1
        stride_bn = 64

        # based on triton.ops.matmul
        pid = tl.program_id(0).to(INDEX_DTYPE)
        grid_m = (M + BLOCK_M - 1) // BLOCK_M
        grid_n = (N + BLOCK_N - 1) // BLOCK_N

        # re-order program ID for better L2 performance
        width = GROUP_M * grid_n
        group_id = pid // width
        group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
        pid_m = group_id * GROUP_M + (pid % group_size)
        pid_n = (pid % width) // (group_size)
        tl.assume(pid_m >= 0)
        tl.assume(pid_n >= 0)

        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if ((stride_am == 1 and stride_ak == M) or (stride_am == K and stride_ak == 1)) and (M >= BLOCK_M and K > 1):
            offs_a_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
        else:
            offs_a_m = rm % M
        if ((stride_bk == 1 and stride_bn == K) or (stride_bk == N and stride_bn == 1)) and (N >= BLOCK_N and K > 1):
            offs_b_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
        else:
            offs_b_n = rn % N
        offs_k = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)

        for k_idx in range(0, tl.cdiv(K, BLOCK_K)):

            a_k_idx_vals = offs_k[None, :] + (k_idx * BLOCK_K)
            b_k_idx_vals = offs_k[:, None] + (k_idx * BLOCK_K)

            idx_m = offs_a_m[:, None]
            idx_n = a_k_idx_vals
            xindex = idx_n + 64*idx_m
            a = tl.load(A + (xindex))

            idx_m = b_k_idx_vals
            idx_n = offs_b_n[None, :]
            xindex = idx_n + 128*idx_m
            b = tl.load(B + ((tl.broadcast_to(idx_m + 64*idx_n, [BLOCK_K, BLOCK_N])).broadcast_to(xindex.shape)))


            acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)


        # rematerialize rm and rn to save registers
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        idx_m = rm[:, None]
        idx_n = rn[None, :]
        mask = (idx_m < M) & (idx_n < N)

        # inductor generates a suffix
        xindex = idx_n + 128*idx_m
        tmp5 = tl.load(in_ptr2 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), mask, eviction_policy='evict_last')
        tmp0 = -acc
        tmp1 = libdevice.exp(tmp0)
        tmp2 = tl.full([1], 1.0, tl.float32)
        tmp3 = tmp1 + tmp2
        tmp4 = (acc / tmp3)
        tmp6 = tmp4 * tmp5
        tl.store(out_ptr1 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), tmp6, mask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = _grid_0;
    uint32_t grid_1 = _grid_1;
    uint32_t grid_2 = _grid_2;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_tem_fused__unsafe_view_mm_mul_silu_view_9 == nullptr) {
        kernels_.triton_tem_fused__unsafe_view_mm_mul_silu_view_9 = loadKernel(__triton_tem_fused__unsafe_view_mm_mul_silu_view_9_start, "triton_tem_fused__unsafe_view_mm_mul_silu_view_9", 12288); 
    }
    CUdeviceptr var_63 = reinterpret_cast<CUdeviceptr>(arg_A.data_ptr());
    CUdeviceptr var_64 = reinterpret_cast<CUdeviceptr>(arg_B.data_ptr());
    CUdeviceptr var_65 = reinterpret_cast<CUdeviceptr>(in_ptr2.data_ptr());
    CUdeviceptr var_66 = reinterpret_cast<CUdeviceptr>(out_ptr1.data_ptr());
    int32_t var_67 = ks0;
    CUdeviceptr global_scratch_scratch_68 = 0;
    CUdeviceptr profile_scratch_scratch_69 = 0;
    void* kernel_args_[] = {&var_63, &var_64, &var_65, &var_66, &var_67, &global_scratch_scratch_68, &profile_scratch_scratch_69};
    launchKernel(kernels_.triton_tem_fused__unsafe_view_mm_mul_silu_view_9, grid_0, grid_1, grid_2, 2, 12288, kernel_args_, stream_);
}

template <typename arg_A_type_, typename arg_B_type_, typename out_ptr0_type_, typename kernels_type_>
static inline void call_triton_tem_fused__unsafe_view_mm_mul_silu_view_10(
    const arg_A_type_& arg_A,
    const arg_B_type_& arg_B,
    const out_ptr0_type_& out_ptr0,
    int64_t ks0,
    int64_t _grid_0,
    int64_t _grid_1,
    int64_t _grid_2,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_tem_fused__unsafe_view_mm_mul_silu_view_10', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

    @triton_heuristics.template(

    num_stages=3,
    num_warps=4,
    triton_meta={'signature': {'arg_A': '*fp32', 'arg_B': '*fp32', 'out_ptr0': '*fp32', 'ks0': 'i32'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'kernel_name': 'triton_tem_fused__unsafe_view_mm_mul_silu_view_10', 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'grid_type': 'FixedGrid', 'fixed_grid': ['_grid_0', '_grid_1', '_grid_2'], 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2'], 'config_args': {'EVEN_K': True, 'USE_FAST_ACCUM': False, 'ACC_TYPE': 'tl.float32', 'BLOCK_M': 16, 'BLOCK_N': 64, 'BLOCK_K': 64, 'GROUP_M': 8, 'ALLOW_TF32': False}},

    )
    @triton.jit
    def triton_tem_fused__unsafe_view_mm_mul_silu_view_10(arg_A, arg_B, out_ptr0, ks0):
        EVEN_K : tl.constexpr = True
        USE_FAST_ACCUM : tl.constexpr = False
        ACC_TYPE : tl.constexpr = tl.float32
        BLOCK_M : tl.constexpr = 16
        BLOCK_N : tl.constexpr = 64
        BLOCK_K : tl.constexpr = 64
        GROUP_M : tl.constexpr = 8
        ALLOW_TF32 : tl.constexpr = False
        INDEX_DTYPE : tl.constexpr = tl.int32
        A = arg_A
        B = arg_B

        M = ks0
        N = 64
        K = 128
        if M * N == 0:
            # early exit due to zero-size input(s)
            return
        stride_am = 128
        stride_ak = 1
        stride_bk = 1
        stride_bn = 128

        # based on triton.ops.matmul
        pid = tl.program_id(0).to(INDEX_DTYPE)
        grid_m = (M + BLOCK_M - 1) // BLOCK_M
        grid_n = (N + BLOCK_N - 1) // BLOCK_N

        # re-order program ID for better L2 performance
        width = GROUP_M * grid_n
        group_id = pid // width
        group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
        pid_m = group_id * GROUP_M + (pid % group_size)
        pid_n = (pid % width) // (group_size)
        tl.assume(pid_m >= 0)
        tl.assume(pid_n >= 0)

        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if ((stride_am == 1 and stride_ak == M) or (stride_am == K and stride_ak == 1)) and (M >= BLOCK_M and K > 1):
            offs_a_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
        else:
            offs_a_m = rm % M
        if ((stride_bk == 1 and stride_bn == K) or (stride_bk == N and stride_bn == 1)) and (N >= BLOCK_N and K > 1):
            offs_b_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
        else:
            offs_b_n = rn % N
        offs_k = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)

        for k_idx in range(0, tl.cdiv(K, BLOCK_K)):

            a_k_idx_vals = offs_k[None, :] + (k_idx * BLOCK_K)
            b_k_idx_vals = offs_k[:, None] + (k_idx * BLOCK_K)

            idx_m = offs_a_m[:, None]
            idx_n = a_k_idx_vals
            xindex = idx_n + 128*idx_m
            a = tl.load(A + (xindex))

            idx_m = b_k_idx_vals
            idx_n = offs_b_n[None, :]
            xindex = idx_n + 64*idx_m
            b = tl.load(B + ((tl.broadcast_to(idx_m + 128*idx_n, [BLOCK_K, BLOCK_N])).broadcast_to(xindex.shape)))


            acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)


        # rematerialize rm and rn to save registers
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        idx_m = rm[:, None]
        idx_n = rn[None, :]
        mask = (idx_m < M) & (idx_n < N)

        # inductor generates a suffix
        xindex = idx_n + 64*idx_m
        tl.store(out_ptr0 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), acc, mask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = _grid_0;
    uint32_t grid_1 = _grid_1;
    uint32_t grid_2 = _grid_2;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_tem_fused__unsafe_view_mm_mul_silu_view_10 == nullptr) {
        kernels_.triton_tem_fused__unsafe_view_mm_mul_silu_view_10 = loadKernel(__triton_tem_fused__unsafe_view_mm_mul_silu_view_10_start, "triton_tem_fused__unsafe_view_mm_mul_silu_view_10", 40960); 
    }
    CUdeviceptr var_70 = reinterpret_cast<CUdeviceptr>(arg_A.data_ptr());
    CUdeviceptr var_71 = reinterpret_cast<CUdeviceptr>(arg_B.data_ptr());
    CUdeviceptr var_72 = reinterpret_cast<CUdeviceptr>(out_ptr0.data_ptr());
    int32_t var_73 = ks0;
    CUdeviceptr global_scratch_scratch_74 = 0;
    CUdeviceptr profile_scratch_scratch_75 = 0;
    void* kernel_args_[] = {&var_70, &var_71, &var_72, &var_73, &global_scratch_scratch_74, &profile_scratch_scratch_75};
    launchKernel(kernels_.triton_tem_fused__unsafe_view_mm_mul_silu_view_10, grid_0, grid_1, grid_2, 4, 40960, kernel_args_, stream_);
}

template <typename in_ptr0_type_, typename in_ptr1_type_, typename in_ptr2_type_, typename in_ptr3_type_, typename in_ptr4_type_, typename out_ptr1_type_, typename kernels_type_>
static inline void call_triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11(
    const in_ptr0_type_& in_ptr0,
    const in_ptr1_type_& in_ptr1,
    const in_ptr2_type_& in_ptr2,
    const in_ptr3_type_& in_ptr3,
    const in_ptr4_type_& in_ptr4,
    const out_ptr1_type_& out_ptr1,
    int64_t xnumel,
    int64_t r0_numel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.persistent_reduction(
        size_hints={'x': 8, 'r0_': 64},
        reduction_hint=ReductionHint.INNER,
        filename=__file__,
        triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'in_ptr3': '*fp32', 'in_ptr4': '*fp32', 'out_ptr1': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (7,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 4, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 64, 'r0_': 8448}}
    )
    @triton.jit
    def triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
        r0_numel = 64
        R0_BLOCK: tl.constexpr = 64
        rnumel = r0_numel
        RBLOCK: tl.constexpr = R0_BLOCK
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        r0_index = tl.arange(0, R0_BLOCK)[None, :]
        r0_offset = 0
        r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
        roffset = r0_offset
        rindex = r0_index
        x0 = xindex
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
        tmp7 = tl.load(in_ptr2 + (r0_1 + 64*x0), xmask, other=0.0)
        tmp9 = tl.load(in_ptr3 + (r0_1 + 64*x0), xmask, other=0.0)
        tmp22 = tl.load(in_ptr4 + (r0_1), None, eviction_policy='evict_last')
        tmp1 = tl.full([1, 1], 256, tl.int32)
        tmp2 = tmp0 + tmp1
        tmp3 = tmp0 < 0
        tmp4 = tl.where(tmp3, tmp2, tmp0)
        tl.device_assert(((0 <= tmp4) & (tmp4 < 256)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 256")
        tmp6 = tl.load(in_ptr1 + (r0_1 + 64*tmp4), xmask, other=0.0)
        tmp8 = tmp6 + tmp7
        tmp10 = tmp8 + tmp9
        tmp11 = tmp10 * tmp10
        tmp12 = tl.broadcast_to(tmp11, [XBLOCK, R0_BLOCK])
        tmp14 = tl.where(xmask, tmp12, 0)
        tmp15 = tl.sum(tmp14, 1)[:, None].to(tl.float32)
        tmp16 = tl.full([1, 1], 64.0, tl.float32)
        tmp17 = (tmp15 / tmp16)
        tmp18 = tl.full([1, 1], 1e-05, tl.float32)
        tmp19 = tmp17 + tmp18
        tmp20 = libdevice.rsqrt(tmp19)
        tmp21 = tmp10 * tmp20
        tmp23 = tmp21 * tmp22
        tl.store(out_ptr1 + (r0_1 + 64*x0), tmp23, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = xnumel;
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11 == nullptr) {
        kernels_.triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11 = loadKernel(__triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11_start, "triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11", 8); 
    }
    CUdeviceptr var_76 = reinterpret_cast<CUdeviceptr>(in_ptr0.data_ptr());
    CUdeviceptr var_77 = reinterpret_cast<CUdeviceptr>(in_ptr1.data_ptr());
    CUdeviceptr var_78 = reinterpret_cast<CUdeviceptr>(in_ptr2.data_ptr());
    CUdeviceptr var_79 = reinterpret_cast<CUdeviceptr>(in_ptr3.data_ptr());
    CUdeviceptr var_80 = reinterpret_cast<CUdeviceptr>(in_ptr4.data_ptr());
    CUdeviceptr var_81 = reinterpret_cast<CUdeviceptr>(out_ptr1.data_ptr());
    int32_t var_82 = xnumel;
    int32_t var_83 = r0_numel;
    CUdeviceptr global_scratch_scratch_84 = 0;
    CUdeviceptr profile_scratch_scratch_85 = 0;
    void* kernel_args_[] = {&var_76, &var_77, &var_78, &var_79, &var_80, &var_81, &var_82, &var_83, &global_scratch_scratch_84, &profile_scratch_scratch_85};
    launchKernel(kernels_.triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11, grid_0, grid_1, grid_2, 2, 8, kernel_args_, stream_);
}

template <typename in_out_ptr0_type_, typename in_ptr0_type_, typename in_ptr1_type_, typename in_ptr2_type_, typename in_ptr3_type_, typename in_ptr4_type_, typename out_ptr1_type_, typename kernels_type_>
static inline void call_triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12(
    const in_out_ptr0_type_& in_out_ptr0,
    const in_ptr0_type_& in_ptr0,
    const in_ptr1_type_& in_ptr1,
    const in_ptr2_type_& in_ptr2,
    const in_ptr3_type_& in_ptr3,
    const in_ptr4_type_& in_ptr4,
    const out_ptr1_type_& out_ptr1,
    int64_t xnumel,
    int64_t r0_numel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.persistent_reduction(
        size_hints={'x': 8, 'r0_': 64},
        reduction_hint=ReductionHint.INNER,
        filename=__file__,
        triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*i64', 'in_ptr1': '*fp32', 'in_ptr2': '*fp32', 'in_ptr3': '*fp32', 'in_ptr4': '*fp32', 'out_ptr1': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]], (5,): [['tt.divisibility', 16]], (6,): [['tt.divisibility', 16]], (8,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 5, 'num_store': 2, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 64, 'r0_': 14592}}
    )
    @triton.jit
    def triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
        r0_numel = 64
        R0_BLOCK: tl.constexpr = 64
        rnumel = r0_numel
        RBLOCK: tl.constexpr = R0_BLOCK
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        r0_index = tl.arange(0, R0_BLOCK)[None, :]
        r0_offset = 0
        r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
        roffset = r0_offset
        rindex = r0_index
        x0 = xindex
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
        tmp7 = tl.load(in_out_ptr0 + (r0_1 + 64*x0), xmask, other=0.0)
        tmp9 = tl.load(in_ptr2 + (r0_1 + 64*x0), xmask, other=0.0)
        tmp11 = tl.load(in_ptr3 + (r0_1 + 64*x0), xmask, other=0.0)
        tmp24 = tl.load(in_ptr4 + (r0_1), None, eviction_policy='evict_last')
        tmp1 = tl.full([1, 1], 256, tl.int32)
        tmp2 = tmp0 + tmp1
        tmp3 = tmp0 < 0
        tmp4 = tl.where(tmp3, tmp2, tmp0)
        tl.device_assert(((0 <= tmp4) & (tmp4 < 256)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 256")
        tmp6 = tl.load(in_ptr1 + (r0_1 + 64*tmp4), xmask, other=0.0)
        tmp8 = tmp6 + tmp7
        tmp10 = tmp8 + tmp9
        tmp12 = tmp10 + tmp11
        tmp13 = tmp12 * tmp12
        tmp14 = tl.broadcast_to(tmp13, [XBLOCK, R0_BLOCK])
        tmp16 = tl.where(xmask, tmp14, 0)
        tmp17 = tl.sum(tmp16, 1)[:, None].to(tl.float32)
        tmp18 = tl.full([1, 1], 64.0, tl.float32)
        tmp19 = (tmp17 / tmp18)
        tmp20 = tl.full([1, 1], 1e-05, tl.float32)
        tmp21 = tmp19 + tmp20
        tmp22 = libdevice.rsqrt(tmp21)
        tmp23 = tmp12 * tmp22
        tmp25 = tmp23 * tmp24
        tl.store(in_out_ptr0 + (r0_1 + 64*x0), tmp12, xmask)
        tl.store(out_ptr1 + (r0_1 + 64*x0), tmp25, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = ((xnumel + (8 - 1)) / (8));
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12 == nullptr) {
        kernels_.triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12 = loadKernel(__triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12_start, "triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12", 256); 
    }
    CUdeviceptr var_86 = reinterpret_cast<CUdeviceptr>(in_out_ptr0.data_ptr());
    CUdeviceptr var_87 = reinterpret_cast<CUdeviceptr>(in_ptr0.data_ptr());
    CUdeviceptr var_88 = reinterpret_cast<CUdeviceptr>(in_ptr1.data_ptr());
    CUdeviceptr var_89 = reinterpret_cast<CUdeviceptr>(in_ptr2.data_ptr());
    CUdeviceptr var_90 = reinterpret_cast<CUdeviceptr>(in_ptr3.data_ptr());
    CUdeviceptr var_91 = reinterpret_cast<CUdeviceptr>(in_ptr4.data_ptr());
    CUdeviceptr var_92 = reinterpret_cast<CUdeviceptr>(out_ptr1.data_ptr());
    int32_t var_93 = xnumel;
    int32_t var_94 = r0_numel;
    CUdeviceptr global_scratch_scratch_95 = 0;
    CUdeviceptr profile_scratch_scratch_96 = 0;
    void* kernel_args_[] = {&var_86, &var_87, &var_88, &var_89, &var_90, &var_91, &var_92, &var_93, &var_94, &global_scratch_scratch_95, &profile_scratch_scratch_96};
    launchKernel(kernels_.triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12, grid_0, grid_1, grid_2, 2, 256, kernel_args_, stream_);
}

template <typename arg_A_type_, typename arg_B_type_, typename in_ptr2_type_, typename out_ptr1_type_, typename kernels_type_>
static inline void call_triton_tem_fused__unsafe_view_mm_mul_silu_view_13(
    const arg_A_type_& arg_A,
    const arg_B_type_& arg_B,
    const in_ptr2_type_& in_ptr2,
    const out_ptr1_type_& out_ptr1,
    int64_t ks0,
    int64_t _grid_0,
    int64_t _grid_1,
    int64_t _grid_2,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_tem_fused__unsafe_view_mm_mul_silu_view_13', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

    @triton_heuristics.template(

    num_stages=5,
    num_warps=2,
    triton_meta={'signature': {'arg_A': '*fp32', 'arg_B': '*fp32', 'in_ptr2': '*fp32', 'out_ptr1': '*fp32', 'ks0': 'i32'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'kernel_name': 'triton_tem_fused__unsafe_view_mm_mul_silu_view_13', 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'grid_type': 'FixedGrid', 'fixed_grid': ['_grid_0', '_grid_1', '_grid_2'], 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2'], 'config_args': {'EVEN_K': True, 'USE_FAST_ACCUM': False, 'ACC_TYPE': 'tl.float32', 'BLOCK_M': 16, 'BLOCK_N': 32, 'BLOCK_K': 64, 'GROUP_M': 8, 'ALLOW_TF32': False}},

    )
    @triton.jit
    def triton_tem_fused__unsafe_view_mm_mul_silu_view_13(arg_A, arg_B, in_ptr2, out_ptr1, ks0):
        EVEN_K : tl.constexpr = True
        USE_FAST_ACCUM : tl.constexpr = False
        ACC_TYPE : tl.constexpr = tl.float32
        BLOCK_M : tl.constexpr = 16
        BLOCK_N : tl.constexpr = 32
        BLOCK_K : tl.constexpr = 64
        GROUP_M : tl.constexpr = 8
        ALLOW_TF32 : tl.constexpr = False
        INDEX_DTYPE : tl.constexpr = tl.int32
        A = arg_A
        B = arg_B

        M = ks0
        N = 128
        K = 64
        if M * N == 0:
            # early exit due to zero-size input(s)
            return
        stride_am = 64
        stride_ak = 1
        stride_bk = 1
        stride_bn = 64

        # based on triton.ops.matmul
        pid = tl.program_id(0).to(INDEX_DTYPE)
        grid_m = (M + BLOCK_M - 1) // BLOCK_M
        grid_n = (N + BLOCK_N - 1) // BLOCK_N

        # re-order program ID for better L2 performance
        width = GROUP_M * grid_n
        group_id = pid // width
        group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
        pid_m = group_id * GROUP_M + (pid % group_size)
        pid_n = (pid % width) // (group_size)
        tl.assume(pid_m >= 0)
        tl.assume(pid_n >= 0)

        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if ((stride_am == 1 and stride_ak == M) or (stride_am == K and stride_ak == 1)) and (M >= BLOCK_M and K > 1):
            offs_a_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
        else:
            offs_a_m = rm % M
        if ((stride_bk == 1 and stride_bn == K) or (stride_bk == N and stride_bn == 1)) and (N >= BLOCK_N and K > 1):
            offs_b_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
        else:
            offs_b_n = rn % N
        offs_k = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)

        for k_idx in range(0, tl.cdiv(K, BLOCK_K)):

            a_k_idx_vals = offs_k[None, :] + (k_idx * BLOCK_K)
            b_k_idx_vals = offs_k[:, None] + (k_idx * BLOCK_K)

            idx_m = offs_a_m[:, None]
            idx_n = a_k_idx_vals
            xindex = idx_n + 64*idx_m
            a = tl.load(A + (xindex))

            idx_m = b_k_idx_vals
            idx_n = offs_b_n[None, :]
            xindex = idx_n + 128*idx_m
            b = tl.load(B + ((tl.broadcast_to(idx_m + 64*idx_n, [BLOCK_K, BLOCK_N])).broadcast_to(xindex.shape)))


            acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)


        # rematerialize rm and rn to save registers
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        idx_m = rm[:, None]
        idx_n = rn[None, :]
        mask = (idx_m < M) & (idx_n < N)

        # inductor generates a suffix
        xindex = idx_n + 128*idx_m
        tmp0 = tl.load(in_ptr2 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), mask, eviction_policy='evict_last')
        tmp1 = -tmp0
        tmp2 = libdevice.exp(tmp1)
        tmp3 = tl.full([1], 1.0, tl.float32)
        tmp4 = tmp2 + tmp3
        tmp5 = (tmp0 / tmp4)
        tmp6 = tmp5 * acc
        tl.store(out_ptr1 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), tmp6, mask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = _grid_0;
    uint32_t grid_1 = _grid_1;
    uint32_t grid_2 = _grid_2;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_tem_fused__unsafe_view_mm_mul_silu_view_13 == nullptr) {
        kernels_.triton_tem_fused__unsafe_view_mm_mul_silu_view_13 = loadKernel(__triton_tem_fused__unsafe_view_mm_mul_silu_view_13_start, "triton_tem_fused__unsafe_view_mm_mul_silu_view_13", 12288); 
    }
    CUdeviceptr var_97 = reinterpret_cast<CUdeviceptr>(arg_A.data_ptr());
    CUdeviceptr var_98 = reinterpret_cast<CUdeviceptr>(arg_B.data_ptr());
    CUdeviceptr var_99 = reinterpret_cast<CUdeviceptr>(in_ptr2.data_ptr());
    CUdeviceptr var_100 = reinterpret_cast<CUdeviceptr>(out_ptr1.data_ptr());
    int32_t var_101 = ks0;
    CUdeviceptr global_scratch_scratch_102 = 0;
    CUdeviceptr profile_scratch_scratch_103 = 0;
    void* kernel_args_[] = {&var_97, &var_98, &var_99, &var_100, &var_101, &global_scratch_scratch_102, &profile_scratch_scratch_103};
    launchKernel(kernels_.triton_tem_fused__unsafe_view_mm_mul_silu_view_13, grid_0, grid_1, grid_2, 2, 12288, kernel_args_, stream_);
}

template <typename in_out_ptr0_type_, typename in_ptr0_type_, typename in_ptr1_type_, typename kernels_type_>
static inline void call_triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14(
    const in_out_ptr0_type_& in_out_ptr0,
    const in_ptr0_type_& in_ptr0,
    const in_ptr1_type_& in_ptr1,
    int64_t xnumel,
    int64_t r0_numel,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
    triton_helpers.set_driver_to_gpu()

    @triton_heuristics.persistent_reduction(
        size_hints={'x': 8, 'r0_': 64},
        reduction_hint=ReductionHint.INNER,
        filename=__file__,
        triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
        inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 3, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 0, 'r0_': 8448}}
    )
    @triton.jit
    def triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14(in_out_ptr0, in_ptr0, in_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
        r0_numel = 64
        R0_BLOCK: tl.constexpr = 64
        rnumel = r0_numel
        RBLOCK: tl.constexpr = R0_BLOCK
        xoffset = tl.program_id(0) * XBLOCK
        xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
        xmask = xindex < xnumel
        r0_index = tl.arange(0, R0_BLOCK)[None, :]
        r0_offset = 0
        r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        x0 = xindex
        tmp0 = tl.load(in_out_ptr0 + (r0_1 + 64*x0), xmask, other=0.0)
        tmp1 = tl.load(in_ptr0 + (r0_1 + 64*x0), xmask, other=0.0)
        tmp14 = tl.load(in_ptr1 + (r0_1), None, eviction_policy='evict_last')
        tmp2 = tmp0 + tmp1
        tmp3 = tmp2 * tmp2
        tmp4 = tl.broadcast_to(tmp3, [XBLOCK, R0_BLOCK])
        tmp6 = tl.where(xmask, tmp4, 0)
        tmp7 = tl.sum(tmp6, 1)[:, None].to(tl.float32)
        tmp8 = tl.full([1, 1], 64.0, tl.float32)
        tmp9 = (tmp7 / tmp8)
        tmp10 = tl.full([1, 1], 1e-05, tl.float32)
        tmp11 = tmp9 + tmp10
        tmp12 = libdevice.rsqrt(tmp11)
        tmp13 = tmp2 * tmp12
        tmp15 = tmp13 * tmp14
        tl.store(in_out_ptr0 + (r0_1 + 64*x0), tmp15, xmask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = ((xnumel + (8 - 1)) / (8));
    uint32_t grid_1 = 1;
    uint32_t grid_2 = 1;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14 == nullptr) {
        kernels_.triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14 = loadKernel(__triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14_start, "triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14", 256); 
    }
    CUdeviceptr var_104 = reinterpret_cast<CUdeviceptr>(in_out_ptr0.data_ptr());
    CUdeviceptr var_105 = reinterpret_cast<CUdeviceptr>(in_ptr0.data_ptr());
    CUdeviceptr var_106 = reinterpret_cast<CUdeviceptr>(in_ptr1.data_ptr());
    int32_t var_107 = xnumel;
    int32_t var_108 = r0_numel;
    CUdeviceptr global_scratch_scratch_109 = 0;
    CUdeviceptr profile_scratch_scratch_110 = 0;
    void* kernel_args_[] = {&var_104, &var_105, &var_106, &var_107, &var_108, &global_scratch_scratch_109, &profile_scratch_scratch_110};
    launchKernel(kernels_.triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14, grid_0, grid_1, grid_2, 2, 256, kernel_args_, stream_);
}

template <typename arg_A_type_, typename arg_B_type_, typename out_ptr0_type_, typename kernels_type_>
static inline void call_triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15(
    const arg_A_type_& arg_A,
    const arg_B_type_& arg_B,
    const out_ptr0_type_& out_ptr0,
    int64_t ks0,
    int64_t _grid_0,
    int64_t _grid_1,
    int64_t _grid_2,
    int32_t device_idx_,
    cudaStream_t stream_,
    kernels_type_& kernels_,
    const std::optional<std::string>& cubin_dir_ = std::nullopt
){
    /*
    async_compile.triton('triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15', '''
    import triton
    import triton.language as tl

    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

    @triton_heuristics.template(

    num_stages=2,
    num_warps=4,
    triton_meta={'signature': {'arg_A': '*fp32', 'arg_B': '*fp32', 'out_ptr0': '*fp32', 'ks0': 'i32'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'kernel_name': 'triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15', 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': True, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': True, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'grid_type': 'FixedGrid', 'fixed_grid': ['_grid_0', '_grid_1', '_grid_2'], 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2'], 'config_args': {'EVEN_K': True, 'USE_FAST_ACCUM': False, 'ACC_TYPE': 'tl.float32', 'BLOCK_M': 16, 'BLOCK_N': 64, 'BLOCK_K': 32, 'GROUP_M': 8, 'ALLOW_TF32': False}},

    )
    @triton.jit
    def triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15(arg_A, arg_B, out_ptr0, ks0):
        EVEN_K : tl.constexpr = True
        USE_FAST_ACCUM : tl.constexpr = False
        ACC_TYPE : tl.constexpr = tl.float32
        BLOCK_M : tl.constexpr = 16
        BLOCK_N : tl.constexpr = 64
        BLOCK_K : tl.constexpr = 32
        GROUP_M : tl.constexpr = 8
        ALLOW_TF32 : tl.constexpr = False
        INDEX_DTYPE : tl.constexpr = tl.int32
        A = arg_A
        B = arg_B

        M = ks0
        N = 256
        K = 64
        if M * N == 0:
            # early exit due to zero-size input(s)
            return
        stride_am = 64
        stride_ak = 1
        stride_bk = 1
        stride_bn = 64

        # based on triton.ops.matmul
        pid = tl.program_id(0).to(INDEX_DTYPE)
        grid_m = (M + BLOCK_M - 1) // BLOCK_M
        grid_n = (N + BLOCK_N - 1) // BLOCK_N

        # re-order program ID for better L2 performance
        width = GROUP_M * grid_n
        group_id = pid // width
        group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
        pid_m = group_id * GROUP_M + (pid % group_size)
        pid_n = (pid % width) // (group_size)
        tl.assume(pid_m >= 0)
        tl.assume(pid_n >= 0)

        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if ((stride_am == 1 and stride_ak == M) or (stride_am == K and stride_ak == 1)) and (M >= BLOCK_M and K > 1):
            offs_a_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
        else:
            offs_a_m = rm % M
        if ((stride_bk == 1 and stride_bn == K) or (stride_bk == N and stride_bn == 1)) and (N >= BLOCK_N and K > 1):
            offs_b_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
        else:
            offs_b_n = rn % N
        offs_k = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)

        for k_idx in range(0, tl.cdiv(K, BLOCK_K)):

            a_k_idx_vals = offs_k[None, :] + (k_idx * BLOCK_K)
            b_k_idx_vals = offs_k[:, None] + (k_idx * BLOCK_K)

            idx_m = offs_a_m[:, None]
            idx_n = a_k_idx_vals
            xindex = idx_n + 64*idx_m
            a = tl.load(A + (xindex))

            idx_m = b_k_idx_vals
            idx_n = offs_b_n[None, :]
            xindex = idx_n + 256*idx_m
            b = tl.load(B + ((tl.broadcast_to(idx_m + 64*idx_n, [BLOCK_K, BLOCK_N])).broadcast_to(xindex.shape)))


            acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)


        # rematerialize rm and rn to save registers
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        idx_m = rm[:, None]
        idx_n = rn[None, :]
        mask = (idx_m < M) & (idx_n < N)

        # inductor generates a suffix
        xindex = idx_n + 256*idx_m
        tl.store(out_ptr0 + (tl.broadcast_to(xindex, [BLOCK_M, BLOCK_N])), acc, mask)
    ''', device_str='cuda')
    */
    uint32_t grid_0 = _grid_0;
    uint32_t grid_1 = _grid_1;
    uint32_t grid_2 = _grid_2;
    if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;
    if (kernels_.triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15 == nullptr) {
        kernels_.triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15 = loadKernel(__triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15_start, "triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15", 10240); 
    }
    CUdeviceptr var_111 = reinterpret_cast<CUdeviceptr>(arg_A.data_ptr());
    CUdeviceptr var_112 = reinterpret_cast<CUdeviceptr>(arg_B.data_ptr());
    CUdeviceptr var_113 = reinterpret_cast<CUdeviceptr>(out_ptr0.data_ptr());
    int32_t var_114 = ks0;
    CUdeviceptr global_scratch_scratch_115 = 0;
    CUdeviceptr profile_scratch_scratch_116 = 0;
    void* kernel_args_[] = {&var_111, &var_112, &var_113, &var_114, &global_scratch_scratch_115, &profile_scratch_scratch_116};
    launchKernel(kernels_.triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15, grid_0, grid_1, grid_2, 4, 10240, kernel_args_, stream_);
}

namespace torch::aot_inductor {

void AOTInductorModel::_const_run_impl(
    std::vector<AtenTensorHandle>& output_handles,
    DeviceStreamType stream,
    AOTIProxyExecutorHandle proxy_executor
) {
    [[maybe_unused]] auto& layers_0_wq_weight = constants_->at(0);
    [[maybe_unused]] auto& layers_0_wk_weight = constants_->at(1);
    [[maybe_unused]] auto& layers_0_wv_weight = constants_->at(2);
    [[maybe_unused]] auto& layers_0_wo_weight = constants_->at(3);
    [[maybe_unused]] auto& layers_0_w1_weight = constants_->at(4);
    [[maybe_unused]] auto& layers_0_w3_weight = constants_->at(5);
    [[maybe_unused]] auto& layers_0_w2_weight = constants_->at(6);
    [[maybe_unused]] auto& layers_1_wq_weight = constants_->at(7);
    [[maybe_unused]] auto& layers_1_wk_weight = constants_->at(8);
    [[maybe_unused]] auto& layers_1_wv_weight = constants_->at(9);
    [[maybe_unused]] auto& layers_1_wo_weight = constants_->at(10);
    [[maybe_unused]] auto& layers_1_w1_weight = constants_->at(11);
    [[maybe_unused]] auto& layers_1_w3_weight = constants_->at(12);
    [[maybe_unused]] auto& layers_1_w2_weight = constants_->at(13);
    [[maybe_unused]] auto& lm_head_weight = constants_->at(14);
    [[maybe_unused]] auto& kernels = static_cast<AOTInductorModelKernels&>(*this->kernels_.get());
    static constexpr int64_t int_array_0[] = {64L, 64L};
    static constexpr int64_t int_array_1[] = {1L, 64L};
    static constexpr int64_t int_array_2[] = {64L, 128L};
    static constexpr int64_t int_array_3[] = {64L, 128L};
    static constexpr int64_t int_array_4[] = {1L, 64L};
    static constexpr int64_t int_array_5[] = {128L, 64L};
    static constexpr int64_t int_array_6[] = {1L, 128L};
    static constexpr int64_t int_array_7[] = {64L, 64L};
    static constexpr int64_t int_array_8[] = {128L, 64L};
    static constexpr int64_t int_array_9[] = {1L, 128L};
    static constexpr int64_t int_array_10[] = {64L, 256L};
    auto var_0 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_0_wq_weight, 2, int_array_0, int_array_1, 0L));
    auto var_1 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_0_wk_weight, 2, int_array_0, int_array_1, 0L));
    auto var_2 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_0_wv_weight, 2, int_array_0, int_array_1, 0L));
    auto var_3 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_0_wo_weight, 2, int_array_0, int_array_1, 0L));
    auto var_4 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_0_w1_weight, 2, int_array_2, int_array_1, 0L));
    auto var_5 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_0_w3_weight, 2, int_array_3, int_array_4, 0L));
    auto var_6 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_0_w2_weight, 2, int_array_5, int_array_6, 0L));
    auto var_7 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_1_wq_weight, 2, int_array_7, int_array_4, 0L));
    auto var_8 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_1_wk_weight, 2, int_array_7, int_array_4, 0L));
    auto var_9 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_1_wv_weight, 2, int_array_0, int_array_1, 0L));
    auto var_10 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_1_wo_weight, 2, int_array_0, int_array_1, 0L));
    auto var_11 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_1_w1_weight, 2, int_array_2, int_array_1, 0L));
    auto var_12 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_1_w3_weight, 2, int_array_2, int_array_1, 0L));
    auto var_13 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(layers_1_w2_weight, 2, int_array_8, int_array_9, 0L));
    auto var_14 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(lm_head_weight, 2, int_array_10, int_array_1, 0L));
    aoti_torch_clone(var_0, &output_handles[0]);
    aoti_torch_clone(var_1, &output_handles[1]);
    aoti_torch_clone(var_2, &output_handles[2]);
    aoti_torch_clone(var_3, &output_handles[3]);
    aoti_torch_clone(var_4, &output_handles[4]);
    aoti_torch_clone(var_5, &output_handles[5]);
    aoti_torch_clone(var_6, &output_handles[6]);
    aoti_torch_clone(var_7, &output_handles[7]);
    aoti_torch_clone(var_8, &output_handles[8]);
    aoti_torch_clone(var_9, &output_handles[9]);
    aoti_torch_clone(var_10, &output_handles[10]);
    aoti_torch_clone(var_11, &output_handles[11]);
    aoti_torch_clone(var_12, &output_handles[12]);
    aoti_torch_clone(var_13, &output_handles[13]);
    aoti_torch_clone(var_14, &output_handles[14]);
} // AOTInductorModel::_const_run_impl

AOTI_NOINLINE static void check_input_0(
    AtenTensorHandle* input_handles
) {
    ConstantHandle arg25_1 = ConstantHandle(input_handles[0]);
    int32_t arg25_1_dtype;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(arg25_1, &arg25_1_dtype));

    int32_t arg25_1_expected_dtype = aoti_torch_dtype_int64();
    if (arg25_1_expected_dtype != arg25_1_dtype) {
        std::stringstream ss;
        ss << "input_handles[0]: unmatched dtype, "
           << "expected: " << arg25_1_expected_dtype << "(at::kLong), "
           << "but got: " << arg25_1_dtype << "\n";
        throw std::runtime_error(ss.str());
    }
    auto arg25_1_size = arg25_1.sizes();

    if (1 != arg25_1_size[0]) {
        std::stringstream ss;
        ss << "input_handles[0]: unmatched dim value at 0, "
           << "expected: 1, " << "but got: " << arg25_1_size[0]
           << "\n";
        throw std::runtime_error(ss.str());
    }

    if (arg25_1_size[1] < 2) {
        std::stringstream ss;
        ss << "input_handles[0]: dim value is too small at 1, "
           << "expected it to be >= 2, " << "but got: "
           << arg25_1_size[1] << "\n";
        throw std::runtime_error(ss.str());
    }

    if (arg25_1_size[1] > 64) {
        std::stringstream ss;
        ss << "input_handles[0]: dim value is too large at 1, "
           << "expected to be <= 64, " << "but got: "
           << arg25_1_size[1] << "\n";
        throw std::runtime_error(ss.str());
    }
    auto arg25_1_stride = arg25_1.strides();

    if (1 != arg25_1_stride[1]) {
        std::stringstream ss;
        ss << "input_handles[0]: unmatched stride value at 1, "
           << "expected: 1, " << "but got: " << arg25_1_stride[1]
           << "\n";
        throw std::runtime_error(ss.str());
    }
    int32_t arg25_1_device_type;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(arg25_1, &arg25_1_device_type));

    int32_t arg25_1_expected_device_type = 1;
    if (arg25_1_expected_device_type != arg25_1_device_type) {
        std::stringstream ss;
        ss << "input_handles[0]: unmatched device type, "
        << "expected: " << arg25_1_expected_device_type << "1(cuda), "
        << "but got: " << arg25_1_device_type << "\n";
        throw std::runtime_error(ss.str());
    }
}

AOTI_NOINLINE static void check_input_1(
    AtenTensorHandle* input_handles
) {
    ConstantHandle arg26_1 = ConstantHandle(input_handles[1]);
    int32_t arg26_1_dtype;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(arg26_1, &arg26_1_dtype));

    int32_t arg26_1_expected_dtype = aoti_torch_dtype_int64();
    if (arg26_1_expected_dtype != arg26_1_dtype) {
        std::stringstream ss;
        ss << "input_handles[1]: unmatched dtype, "
           << "expected: " << arg26_1_expected_dtype << "(at::kLong), "
           << "but got: " << arg26_1_dtype << "\n";
        throw std::runtime_error(ss.str());
    }
    auto arg26_1_size = arg26_1.sizes();

    if (arg26_1_size[0] < 2) {
        std::stringstream ss;
        ss << "input_handles[1]: dim value is too small at 0, "
           << "expected it to be >= 2, " << "but got: "
           << arg26_1_size[0] << "\n";
        throw std::runtime_error(ss.str());
    }

    if (arg26_1_size[0] > 64) {
        std::stringstream ss;
        ss << "input_handles[1]: dim value is too large at 0, "
           << "expected to be <= 64, " << "but got: "
           << arg26_1_size[0] << "\n";
        throw std::runtime_error(ss.str());
    }
    auto arg26_1_stride = arg26_1.strides();

    if (1 != arg26_1_stride[0]) {
        std::stringstream ss;
        ss << "input_handles[1]: unmatched stride value at 0, "
           << "expected: 1, " << "but got: " << arg26_1_stride[0]
           << "\n";
        throw std::runtime_error(ss.str());
    }
    int32_t arg26_1_device_type;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(arg26_1, &arg26_1_device_type));

    int32_t arg26_1_expected_device_type = 1;
    if (arg26_1_expected_device_type != arg26_1_device_type) {
        std::stringstream ss;
        ss << "input_handles[1]: unmatched device type, "
        << "expected: " << arg26_1_expected_device_type << "1(cuda), "
        << "but got: " << arg26_1_device_type << "\n";
        throw std::runtime_error(ss.str());
    }
}

static bool _check_aoti_runtime_check_inputs_env() {
    const static char* env_var_value = getenv("AOTI_RUNTIME_CHECK_INPUTS");
    const static bool result = env_var_value != nullptr && env_var_value[0] != '0';
    return result;
}

AOTI_NOINLINE static void __check_inputs_outputs(
    AtenTensorHandle* input_handles,
    AtenTensorHandle* output_handles) {
    if (!_check_aoti_runtime_check_inputs_env()){
        return;
    }
    check_input_0(input_handles);
    check_input_1(input_handles);
}

void AOTInductorModel::run_impl(
    AtenTensorHandle*
        input_handles, // array of input AtenTensorHandle; handles
                        // are stolen; the array itself is borrowed
    AtenTensorHandle*
        output_handles, // array for writing output AtenTensorHandle; handles
                        // will be stolen by the caller; the array itself is
                        // borrowed
    DeviceStreamType stream,
    AOTIProxyExecutorHandle proxy_executor
) {
    __check_inputs_outputs(input_handles, output_handles);

    auto inputs = steal_from_raw_handles_to_raii_handles(input_handles, 2);
    auto arg25_1 = std::move(inputs[0]);
    auto arg26_1 = std::move(inputs[1]);
    [[maybe_unused]] auto& layers_0_wq_weight = constants_->at(0);
    [[maybe_unused]] auto& layers_0_wk_weight = constants_->at(1);
    [[maybe_unused]] auto& layers_0_wv_weight = constants_->at(2);
    [[maybe_unused]] auto& layers_0_wo_weight = constants_->at(3);
    [[maybe_unused]] auto& layers_0_w1_weight = constants_->at(4);
    [[maybe_unused]] auto& layers_0_w3_weight = constants_->at(5);
    [[maybe_unused]] auto& layers_0_w2_weight = constants_->at(6);
    [[maybe_unused]] auto& layers_1_wq_weight = constants_->at(7);
    [[maybe_unused]] auto& layers_1_wk_weight = constants_->at(8);
    [[maybe_unused]] auto& layers_1_wv_weight = constants_->at(9);
    [[maybe_unused]] auto& layers_1_wo_weight = constants_->at(10);
    [[maybe_unused]] auto& layers_1_w1_weight = constants_->at(11);
    [[maybe_unused]] auto& layers_1_w3_weight = constants_->at(12);
    [[maybe_unused]] auto& layers_1_w2_weight = constants_->at(13);
    [[maybe_unused]] auto& lm_head_weight = constants_->at(14);
    [[maybe_unused]] auto& embed_weight = constants_->at(15);
    [[maybe_unused]] auto& layers_0_attn_norm_weight = constants_->at(16);
    [[maybe_unused]] auto& layers_0_mlp_norm_weight = constants_->at(17);
    [[maybe_unused]] auto& layers_1_attn_norm_weight = constants_->at(18);
    [[maybe_unused]] auto& layers_1_mlp_norm_weight = constants_->at(19);
    [[maybe_unused]] auto& norm_weight = constants_->at(20);
    [[maybe_unused]] auto& layers_0_k_cache = constants_->at(21);
    [[maybe_unused]] auto& layers_0_v_cache = constants_->at(22);
    [[maybe_unused]] auto& layers_1_k_cache = constants_->at(23);
    [[maybe_unused]] auto& layers_1_v_cache = constants_->at(24);
    [[maybe_unused]] auto& _FOLDED_CONST_permute = constants_->at(25);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_2 = constants_->at(26);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_4 = constants_->at(27);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_11 = constants_->at(28);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_12 = constants_->at(29);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_13 = constants_->at(30);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_14 = constants_->at(31);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_15 = constants_->at(32);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_17 = constants_->at(33);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_19 = constants_->at(34);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_26 = constants_->at(35);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_27 = constants_->at(36);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_28 = constants_->at(37);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_29 = constants_->at(38);
    [[maybe_unused]] auto& _FOLDED_CONST_permute_30 = constants_->at(39);

    if ((reinterpret_cast<std::uintptr_t>(arg25_1.data_ptr()) & (16 -1)) != 0) {
        AOTI_TORCH_WARN("Input 0 was compiled as 16-bytes aligned, but it is not aligned at run time. Copying to an aligned tensor to guarantee correctness, but expect a performance hit.");
        AtenTensorHandle arg25_1_aligned;
        aoti_torch_clone_preserve_strides(arg25_1, &arg25_1_aligned);
        arg25_1 = std::move(RAIIAtenTensorHandle(arg25_1_aligned));
    }

    if ((reinterpret_cast<std::uintptr_t>(arg26_1.data_ptr()) & (16 -1)) != 0) {
        AOTI_TORCH_WARN("Input 1 was compiled as 16-bytes aligned, but it is not aligned at run time. Copying to an aligned tensor to guarantee correctness, but expect a performance hit.");
        AtenTensorHandle arg26_1_aligned;
        aoti_torch_clone_preserve_strides(arg26_1, &arg26_1_aligned);
        arg26_1 = std::move(RAIIAtenTensorHandle(arg26_1_aligned));
    }
    auto arg25_1_size = arg25_1.sizes();
    int64_t s27 = arg25_1_size[1];
    inputs.clear();
    [[maybe_unused]] auto& kernels = static_cast<AOTInductorModelKernels&>(*this->kernels_.get());

    AOTICudaStreamGuard stream_guard(stream, this->device_idx_);
    const int64_t int_array_0[] = {1L, s27, 64L};
    const int64_t int_array_1[] = {64L*s27, 64L, 1L};
    AtenTensorHandle buf1_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(3, int_array_0, int_array_1, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf1_handle));
    RAIIAtenTensorHandle buf1(buf1_handle);
    // Topologically Sorted Source Nodes: [embedding, pow_1, mean, add, rsqrt, mul, mul_1], Original ATen: [aten.embedding, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul]
    call_triton_per_fused_add_embedding_mean_mul_pow_rsqrt_0(arg25_1, embed_weight, layers_0_attn_norm_weight, buf1, s27, 64L, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_2[] = {s27, 64L};
    static constexpr int64_t int_array_3[] = {64L, 1L};
    AtenTensorHandle buf2_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_2, int_array_3, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf2_handle));
    RAIIAtenTensorHandle buf2(buf2_handle);
    // Topologically Sorted Source Nodes: [embedding, pow_1, mean, add, rsqrt, mul, mul_1, linear], Original ATen: [aten.embedding, aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.view, aten.mm]
    call_triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1(buf1, _FOLDED_CONST_permute, buf2, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_4[] = {s27, 64L};
    static constexpr int64_t int_array_5[] = {64L, 1L};
    AtenTensorHandle buf3_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_4, int_array_5, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf3_handle));
    RAIIAtenTensorHandle buf3(buf3_handle);
    // Topologically Sorted Source Nodes: [linear_1], Original ATen: [aten.view, aten.mm]
    call_triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1(buf1, _FOLDED_CONST_permute_2, buf3, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_6[] = {s27, 64L};
    static constexpr int64_t int_array_7[] = {64L, 1L};
    AtenTensorHandle buf8_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_6, int_array_7, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf8_handle));
    RAIIAtenTensorHandle buf8(buf8_handle);
    // Topologically Sorted Source Nodes: [linear_2], Original ATen: [aten.view, aten.mm]
    call_triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1(buf1, _FOLDED_CONST_permute_4, buf8, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf1.reset();
    // Topologically Sorted Source Nodes: [linear_1, view_1, transpose_1, index_copy_, linear_2, view_2, transpose_2, index_copy__1], Original ATen: [aten._unsafe_view, aten.view, aten.transpose, aten.index_copy]
    int64_t triton_poi_fused__unsafe_view_index_copy_transpose_view_2_xnumel = 64L*s27;
    call_triton_poi_fused__unsafe_view_index_copy_transpose_view_2(arg26_1, buf3, buf8, layers_0_k_cache, layers_0_v_cache, triton_poi_fused__unsafe_view_index_copy_transpose_view_2_xnumel, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf3.reset();
    const int64_t int_array_8[] = {4L, s27, 64L};
    const int64_t int_array_9[] = {64L*s27, 64L, 1L};
    AtenTensorHandle buf5_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(3, int_array_8, int_array_9, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf5_handle));
    RAIIAtenTensorHandle buf5(buf5_handle);
    // Topologically Sorted Source Nodes: [linear, view, transpose, matmul], Original ATen: [aten._unsafe_view, aten.view, aten.transpose, aten.bmm]
    call_triton_tem_fused__unsafe_view_bmm_transpose_view_3(buf2, layers_0_k_cache, buf5, s27, 2L*(c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L))), 4L, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_10[] = {1L, 4L, s27, 64L};
    const int64_t int_array_11[] = {256L*s27, 64L*s27, 64L, 1L};
    auto buf10 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf5, 4, int_array_10, int_array_11, 0L)); buf5.reset();  // reuse
    // Topologically Sorted Source Nodes: [arange, unsqueeze, unsqueeze_1, le_1, unsqueeze_2, unsqueeze_3, bitwise_not, masked_fill, matmul, div, softmax], Original ATen: [aten.arange, aten.unsqueeze, aten.le, aten.bitwise_not, aten.masked_fill, aten.view, aten.div, prims.prepare_softmax_online, aten.sub, aten.exp, aten._softmax]
    int64_t triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4_xnumel = 4L*s27;
    call_triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4(buf10, arg26_1, s27, triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4_xnumel, 64L, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_12[] = {4L, s27, 16L};
    const int64_t int_array_13[] = {16L*s27, 16L, 1L};
    auto buf11 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf2, 3, int_array_12, int_array_13, 0L)); buf2.reset();  // reuse
    // Topologically Sorted Source Nodes: [arange, unsqueeze, unsqueeze_1, le_1, unsqueeze_2, unsqueeze_3, bitwise_not, masked_fill, matmul, div, softmax, matmul_1], Original ATen: [aten.arange, aten.unsqueeze, aten.le, aten.bitwise_not, aten.masked_fill, aten.view, aten.div, aten.sub, aten.exp, aten._softmax, aten.bmm]
    call_triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5(buf10, layers_0_v_cache, buf11, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 4L, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf10.reset();
    const int64_t int_array_14[] = {1L, s27, 4L, 16L};
    const int64_t int_array_15[] = {64L*s27, 64L, 16L, 1L};
    auto buf12 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf8, 4, int_array_14, int_array_15, 0L)); buf8.reset();  // reuse
    // Topologically Sorted Source Nodes: [matmul_1, transpose_4, reshape], Original ATen: [aten.view, aten.transpose, aten.clone]
    int64_t triton_poi_fused_clone_transpose_view_6_xnumel = 64L*s27;
    call_triton_poi_fused_clone_transpose_view_6(buf11, buf12, s27, triton_poi_fused_clone_transpose_view_6_xnumel, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_16[] = {s27, 64L};
    static constexpr int64_t int_array_17[] = {64L, 1L};
    auto buf13 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf11, 2, int_array_16, int_array_17, 0L)); buf11.reset();  // reuse
    // Topologically Sorted Source Nodes: [matmul_1, transpose_4, reshape, linear_3], Original ATen: [aten.view, aten.transpose, aten.clone, aten._unsafe_view, aten.mm]
    call_triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1(buf12, _FOLDED_CONST_permute_11, buf13, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_18[] = {1L, s27, 64L};
    const int64_t int_array_19[] = {64L*s27, 64L, 1L};
    auto buf15 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf12, 3, int_array_18, int_array_19, 0L)); buf12.reset();  // reuse
    // Topologically Sorted Source Nodes: [embedding, linear_3, add_1, pow_2, mean_1, add_2, rsqrt_1, mul_2, mul_3], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten.pow, aten.mean, aten.rsqrt, aten.mul]
    call_triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_7(arg25_1, embed_weight, buf13, layers_0_mlp_norm_weight, buf15, s27, 64L, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_20[] = {s27, 128L};
    static constexpr int64_t int_array_21[] = {128L, 1L};
    AtenTensorHandle buf17_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_20, int_array_21, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf17_handle));
    RAIIAtenTensorHandle buf17(buf17_handle);
    // Topologically Sorted Source Nodes: [linear_5], Original ATen: [aten.view, aten.mm]
    call_triton_tem_fused_mm_view_8(buf15, _FOLDED_CONST_permute_13, buf17, s27, 4L*(c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L))), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_22[] = {1L, s27, 128L};
    const int64_t int_array_23[] = {128L*s27, 128L, 1L};
    AtenTensorHandle buf18_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(3, int_array_22, int_array_23, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf18_handle));
    RAIIAtenTensorHandle buf18(buf18_handle);
    // Topologically Sorted Source Nodes: [linear_4, silu, linear_5, mul_4], Original ATen: [aten.view, aten.mm, aten._unsafe_view, aten.silu, aten.mul]
    call_triton_tem_fused__unsafe_view_mm_mul_silu_view_9(buf15, _FOLDED_CONST_permute_12, buf17, buf18, s27, 4L*(c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L))), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf17.reset();
    const int64_t int_array_24[] = {s27, 64L};
    static constexpr int64_t int_array_25[] = {64L, 1L};
    auto buf19 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf15, 2, int_array_24, int_array_25, 0L)); buf15.reset();  // reuse
    // Topologically Sorted Source Nodes: [linear_4, silu, linear_5, mul_4, linear_6], Original ATen: [aten._unsafe_view, aten.silu, aten.mul, aten.view, aten.mm]
    call_triton_tem_fused__unsafe_view_mm_mul_silu_view_10(buf18, _FOLDED_CONST_permute_14, buf19, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf18.reset();
    const int64_t int_array_26[] = {1L, s27, 64L};
    const int64_t int_array_27[] = {64L*s27, 64L, 1L};
    AtenTensorHandle buf21_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(3, int_array_26, int_array_27, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf21_handle));
    RAIIAtenTensorHandle buf21(buf21_handle);
    // Topologically Sorted Source Nodes: [embedding, linear_3, add_1, linear_6, add_3, pow_3, mean_2, add_4, rsqrt_2, mul_5, mul_6], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten.pow, aten.mean, aten.rsqrt, aten.mul]
    call_triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_11(arg25_1, embed_weight, buf13, buf19, layers_1_attn_norm_weight, buf21, s27, 64L, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_28[] = {s27, 64L};
    static constexpr int64_t int_array_29[] = {64L, 1L};
    AtenTensorHandle buf22_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_28, int_array_29, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf22_handle));
    RAIIAtenTensorHandle buf22(buf22_handle);
    // Topologically Sorted Source Nodes: [linear_7], Original ATen: [aten.view, aten.mm]
    call_triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1(buf21, _FOLDED_CONST_permute_15, buf22, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_30[] = {s27, 64L};
    static constexpr int64_t int_array_31[] = {64L, 1L};
    AtenTensorHandle buf23_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_30, int_array_31, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf23_handle));
    RAIIAtenTensorHandle buf23(buf23_handle);
    // Topologically Sorted Source Nodes: [linear_8], Original ATen: [aten.view, aten.mm]
    call_triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1(buf21, _FOLDED_CONST_permute_17, buf23, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_32[] = {s27, 64L};
    static constexpr int64_t int_array_33[] = {64L, 1L};
    AtenTensorHandle buf28_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_32, int_array_33, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf28_handle));
    RAIIAtenTensorHandle buf28(buf28_handle);
    // Topologically Sorted Source Nodes: [linear_9], Original ATen: [aten.view, aten.mm]
    call_triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1(buf21, _FOLDED_CONST_permute_19, buf28, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf21.reset();
    // Topologically Sorted Source Nodes: [linear_8, view_4, transpose_6, index_copy__2, linear_9, view_5, transpose_7, index_copy__3], Original ATen: [aten._unsafe_view, aten.view, aten.transpose, aten.index_copy]
    triton_poi_fused__unsafe_view_index_copy_transpose_view_2_xnumel = 64L*s27;
    call_triton_poi_fused__unsafe_view_index_copy_transpose_view_2(arg26_1, buf23, buf28, layers_1_k_cache, layers_1_v_cache, triton_poi_fused__unsafe_view_index_copy_transpose_view_2_xnumel, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf23.reset();
    buf28.reset();
    const int64_t int_array_34[] = {4L, s27, 64L};
    const int64_t int_array_35[] = {64L*s27, 64L, 1L};
    AtenTensorHandle buf25_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(3, int_array_34, int_array_35, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf25_handle));
    RAIIAtenTensorHandle buf25(buf25_handle);
    // Topologically Sorted Source Nodes: [linear_7, view_3, transpose_5, matmul_2], Original ATen: [aten._unsafe_view, aten.view, aten.transpose, aten.bmm]
    call_triton_tem_fused__unsafe_view_bmm_transpose_view_3(buf22, layers_1_k_cache, buf25, s27, 2L*(c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L))), 4L, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf22.reset();
    const int64_t int_array_36[] = {1L, 4L, s27, 64L};
    const int64_t int_array_37[] = {256L*s27, 64L*s27, 64L, 1L};
    auto buf30 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf25, 4, int_array_36, int_array_37, 0L)); buf25.reset();  // reuse
    // Topologically Sorted Source Nodes: [arange_1, unsqueeze_4, unsqueeze_5, le_3, unsqueeze_6, unsqueeze_7, bitwise_not_1, masked_fill_1, matmul_2, div_1, softmax_1], Original ATen: [aten.arange, aten.unsqueeze, aten.le, aten.bitwise_not, aten.masked_fill, aten.view, aten.div, prims.prepare_softmax_online, aten.sub, aten.exp, aten._softmax]
    triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4_xnumel = 4L*s27;
    call_triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4(buf30, arg26_1, s27, triton_per_fused__softmax_arange_bitwise_not_div_exp_le_masked_fill_prepare_softmax_online_sub_unsqueeze_view_4_xnumel, 64L, this->device_idx_, stream, kernels, this->cubin_dir_);
    arg26_1.reset();
    const int64_t int_array_38[] = {4L, s27, 16L};
    const int64_t int_array_39[] = {16L*s27, 16L, 1L};
    AtenTensorHandle buf31_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(3, int_array_38, int_array_39, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf31_handle));
    RAIIAtenTensorHandle buf31(buf31_handle);
    // Topologically Sorted Source Nodes: [arange_1, unsqueeze_4, unsqueeze_5, le_3, unsqueeze_6, unsqueeze_7, bitwise_not_1, masked_fill_1, matmul_2, div_1, softmax_1, matmul_3], Original ATen: [aten.arange, aten.unsqueeze, aten.le, aten.bitwise_not, aten.masked_fill, aten.view, aten.div, aten.sub, aten.exp, aten._softmax, aten.bmm]
    call_triton_tem_fused__softmax_arange_bitwise_not_bmm_div_exp_le_masked_fill_sub_unsqueeze_view_5(buf30, layers_1_v_cache, buf31, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 4L, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf30.reset();
    const int64_t int_array_40[] = {1L, s27, 4L, 16L};
    const int64_t int_array_41[] = {64L*s27, 64L, 16L, 1L};
    AtenTensorHandle buf32_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(4, int_array_40, int_array_41, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf32_handle));
    RAIIAtenTensorHandle buf32(buf32_handle);
    // Topologically Sorted Source Nodes: [matmul_3, transpose_9, reshape_1], Original ATen: [aten.view, aten.transpose, aten.clone]
    triton_poi_fused_clone_transpose_view_6_xnumel = 64L*s27;
    call_triton_poi_fused_clone_transpose_view_6(buf31, buf32, s27, triton_poi_fused_clone_transpose_view_6_xnumel, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_42[] = {s27, 64L};
    static constexpr int64_t int_array_43[] = {64L, 1L};
    auto buf33 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf31, 2, int_array_42, int_array_43, 0L)); buf31.reset();  // reuse
    // Topologically Sorted Source Nodes: [matmul_3, transpose_9, reshape_1, linear_10], Original ATen: [aten.view, aten.transpose, aten.clone, aten._unsafe_view, aten.mm]
    call_triton_tem_fused_add_embedding_mean_mm_mul_pow_rsqrt_view_1(buf32, _FOLDED_CONST_permute_26, buf33, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_44[] = {1L, s27, 64L};
    const int64_t int_array_45[] = {64L*s27, 64L, 1L};
    auto buf34 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf13, 3, int_array_44, int_array_45, 0L)); buf13.reset();  // reuse
    auto buf36 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf32, 3, int_array_44, int_array_45, 0L)); buf32.reset();  // reuse
    // Topologically Sorted Source Nodes: [embedding, linear_3, add_1, linear_6, add_3, linear_10, add_5, pow_4, mean_3, add_6, rsqrt_3, mul_7, mul_8], Original ATen: [aten.embedding, aten._unsafe_view, aten.add, aten.pow, aten.mean, aten.rsqrt, aten.mul]
    call_triton_per_fused__unsafe_view_add_embedding_mean_mul_pow_rsqrt_12(buf34, arg25_1, embed_weight, buf19, buf33, layers_1_mlp_norm_weight, buf36, s27, 64L, this->device_idx_, stream, kernels, this->cubin_dir_);
    arg25_1.reset();
    buf19.reset();
    buf33.reset();
    const int64_t int_array_46[] = {s27, 128L};
    static constexpr int64_t int_array_47[] = {128L, 1L};
    AtenTensorHandle buf37_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_46, int_array_47, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf37_handle));
    RAIIAtenTensorHandle buf37(buf37_handle);
    // Topologically Sorted Source Nodes: [pow_4, mean_3, add_6, rsqrt_3, mul_7, mul_8, linear_11], Original ATen: [aten.pow, aten.mean, aten.add, aten.rsqrt, aten.mul, aten.view, aten.mm]
    call_triton_tem_fused_mm_view_8(buf36, _FOLDED_CONST_permute_27, buf37, s27, 4L*(c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L))), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    const int64_t int_array_48[] = {1L, s27, 128L};
    const int64_t int_array_49[] = {128L*s27, 128L, 1L};
    AtenTensorHandle buf39_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(3, int_array_48, int_array_49, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf39_handle));
    RAIIAtenTensorHandle buf39(buf39_handle);
    // Topologically Sorted Source Nodes: [linear_11, silu_1, linear_12, mul_9], Original ATen: [aten._unsafe_view, aten.silu, aten.view, aten.mm, aten.mul]
    call_triton_tem_fused__unsafe_view_mm_mul_silu_view_13(buf36, _FOLDED_CONST_permute_28, buf37, buf39, s27, 4L*(c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L))), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf37.reset();
    const int64_t int_array_50[] = {s27, 64L};
    static constexpr int64_t int_array_51[] = {64L, 1L};
    auto buf40 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf36, 2, int_array_50, int_array_51, 0L)); buf36.reset();  // reuse
    // Topologically Sorted Source Nodes: [linear_11, silu_1, linear_12, mul_9, linear_13], Original ATen: [aten._unsafe_view, aten.silu, aten.mul, aten.view, aten.mm]
    call_triton_tem_fused__unsafe_view_mm_mul_silu_view_10(buf39, _FOLDED_CONST_permute_29, buf40, s27, c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L)), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf39.reset();
    auto buf42 = std::move(buf34);  // reuse
    // Topologically Sorted Source Nodes: [linear_13, add_7, pow_5, mean_4, add_8, rsqrt_4, mul_10, mul_11], Original ATen: [aten._unsafe_view, aten.add, aten.pow, aten.mean, aten.rsqrt, aten.mul]
    call_triton_per_fused__unsafe_view_add_mean_mul_pow_rsqrt_14(buf42, buf40, norm_weight, s27, 64L, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf40.reset();
    const int64_t int_array_52[] = {s27, 256L};
    static constexpr int64_t int_array_53[] = {256L, 1L};
    AtenTensorHandle buf43_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_52, int_array_53, cached_torch_dtype_float32, cached_torch_device_type_cuda, this->device_idx_, &buf43_handle));
    RAIIAtenTensorHandle buf43(buf43_handle);
    // Topologically Sorted Source Nodes: [linear_13, add_7, pow_5, mean_4, add_8, rsqrt_4, mul_10, mul_11, linear_14], Original ATen: [aten._unsafe_view, aten.add, aten.pow, aten.mean, aten.rsqrt, aten.mul, aten.view, aten.mm]
    call_triton_tem_fused__unsafe_view_add_mean_mm_mul_pow_rsqrt_view_15(buf42, _FOLDED_CONST_permute_30, buf43, s27, 4L*(c10::div_floor_integer(static_cast<int64_t>(15L + s27), static_cast<int64_t>(16L))), 1, 1, this->device_idx_, stream, kernels, this->cubin_dir_);
    buf42.reset();
    const int64_t int_array_54[] = {1L, s27, 256L};
    const int64_t int_array_55[] = {256L*s27, 256L, 1L};
    auto var_0 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf43, 3, int_array_54, int_array_55, 0L));
    output_handles[0] = var_0.release();
} // AOTInductorModel::run_impl
} // namespace torch::aot_inductor




// Compile cmd
// /opt/gcc/bin/g++ /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cihcrfbi2p553vpy3zw6buhi4b3fvt6jtgml3s56lsghb77ysb5j.wrapper.cpp -D TORCH_INDUCTOR_CPP_WRAPPER -D STANDALONE_TORCH_HEADER -D  C10_USING_CUSTOM_GENERATED_MACROS -D  USE_CUDA  -O1 -DNDEBUG -fno-trapping-math -funsafe-math-optimizations -ffinite-math-only -fno-signed-zeros -fno-math-errno -fno-finite-math-only -fno-unsafe-math-optimizations -ffp-contract=off -fexcess-precision=fast -fno-tree-loop-vectorize -march=native -fPIC -Wall -std=c++17 -Wno-unused-variable -Wno-unknown-pragmas -pedantic -fopenmp  -include /tmp/torchinductor_root/precompiled_headers/cozzmtvse7ve2cpkrcqui66i4fwiyekuvvejyrgtqe4hgper2yxv.h -I/usr/include/python3.12 -I/opt/torch/.venv/lib/python3.12/site-packages/torch/include -I/opt/torch/.venv/lib/python3.12/site-packages/torch/include/torch/csrc/api/include -I/usr/local/cuda/include    -c -o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cihcrfbi2p553vpy3zw6buhi4b3fvt6jtgml3s56lsghb77ysb5j.wrapper.o
// Link cmd
// /opt/gcc/bin/g++ /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cihcrfbi2p553vpy3zw6buhi4b3fvt6jtgml3s56lsghb77ysb5j.wrapper.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/czxhcyi6kk54mtvyibfwn3th5nwkjhqtk3ner7nygl4i3rrmauth.kernel.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cihcrfbi2p553vpy3zw6buhi4b3fvt6jtgml3s56lsghb77ysb5j/czgz7xoyye5lzafb77coora7f4wczavg2usafye7qilfblysugvo.weights.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/ckgp74ftzt7iqmxyj4cf4ieeaymnbv467h6n3otxdo72d6viwqef.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/czxtvmoqnk35f7l6mzzygvubu3rakdunhywhgghg6ezmuvx7q3vu.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/c55p4s6r4a2ke7i4mgmlrn2iabbve7a6las3x3s6wdxayhjbkwtt.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cfnld4xqupouownel4koc3dkpxuls4bj5rp7xei4j634ksxeeelf.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cgq5dc3kqmdlg5h5x5tx7fq7frzv7r7rmip5of5d5kx6cel56575.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cean7fyrstinkcnzz7rf43k3akdsrjbgjrlrivufm4ul4j3cjgzy.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cejwubixldl3gcnqjrv72yygkm6pxya6rb2mf4jswj2emhuhczrf.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/ckz24tw2ncwsbjeqfwdtzqc7x3c4gkagcf4asys7cy5lb3tgdfg7.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/c2vktjrymqxyprn6txic4vw745v7qo2jbh2h52awjr6i6xbwjrdz.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cphnguenaupjlt464teqq656ug7da2uz3du2x5pch2ykj2xca7q5.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cf6joilufmvdx5ragbcbgxmdyuwunmjm7uo6hjcmclsbpja7vwtf.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/c7pfp5uclxbk6mvkcs26fqkqaz3fdokrbc5dvpqfglhuea3u4gny.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cjv26kpb2yxzt7qvcxmwhdevigvqtfpkghtfxbt2ocbfd2fbogtz.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/covrgrkgvhzoh23lswhcckwe46sxh4slzrmq4kq677qf7czjs33s.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/caem6so7nzn5xjpaxdznxfznoxxmd3lzn4ixvk6ltsklqcs3xgjp.cubin.o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/c2xuihvs7bmfp4j3c4hwzvj3dj5qlxgkuiermrdnkle5ele3r5fi.cubin.o -D TORCH_INDUCTOR_CPP_WRAPPER -D STANDALONE_TORCH_HEADER -D  C10_USING_CUSTOM_GENERATED_MACROS -D  USE_CUDA  -O3 -DNDEBUG -fno-trapping-math -funsafe-math-optimizations -ffinite-math-only -fno-signed-zeros -fno-math-errno -fno-finite-math-only -fno-unsafe-math-optimizations -ffp-contract=off -fexcess-precision=fast -fno-tree-loop-vectorize -march=native -shared -fPIC -Wall -std=c++17 -Wno-unused-variable -Wno-unknown-pragmas -pedantic -fopenmp  -I/usr/include/python3.12 -I/opt/torch/.venv/lib/python3.12/site-packages/torch/include -I/opt/torch/.venv/lib/python3.12/site-packages/torch/include/torch/csrc/api/include -I/usr/local/cuda/include    -o /tmp/torchinductor_root/cv5ikldxqg73ou2u4ugok6p2qmbqmufq6l3ubwilbn5ouqadoavg/cihcrfbi2p553vpy3zw6buhi4b3fvt6jtgml3s56lsghb77ysb5j.wrapper.so  -lgomp -lcuda  -L/usr/lib/x86_64-linux-gnu -L/usr/local/cuda-13.0/targets/x86_64-linux/lib -L/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs 
