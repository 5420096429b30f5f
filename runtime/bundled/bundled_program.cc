#include "runtime/bundled/bundled_program.h"

#include <math.h>
#include <string.h>

#include "runtime/core/log.h"
#include "runtime/core/tensor.h"
#include "schema/bundled_program_generated.h"
#include "schema/format_window.h"

namespace ember {
namespace bundled {

namespace {

namespace fb = ember_bundled;
using ull = unsigned long long;

// Where a value sits, for messages: "method 'forward' case 3 input 1".
struct Where {
  const char* method;
  size_t test_case;
  const char* what;  // "input" or "expected output"
  size_t index;
};

#define EMBER_BUNDLE_WHERE_FMT "method '%s' case %zu %s %zu"
#define EMBER_BUNDLE_WHERE_ARGS(w) (w).method, (w).test_case, (w).what, (w).index

// Bytes a bundled tensor's elements take, or an error naming the value. Sizes are checked for sign, rank and
// overflow here, so later calls can multiply them freely.
Error check_tensor(const fb::Tensor* t, const Where& w) {
  const int type = static_cast<int>(t->scalar_type());
  EMBER_CHECK_OR_RETURN_ERROR(is_valid_scalar_type(type) && element_size(static_cast<ScalarType>(type)) > 0,
                              InvalidProgram, EMBER_BUNDLE_WHERE_FMT ": scalar type %d has no storage here",
                              EMBER_BUNDLE_WHERE_ARGS(w), type);
  EMBER_CHECK_OR_RETURN_ERROR(t->sizes() != nullptr, InvalidProgram, EMBER_BUNDLE_WHERE_FMT ": tensor has no sizes",
                              EMBER_BUNDLE_WHERE_ARGS(w));
  const size_t rank = t->sizes()->size();
  EMBER_CHECK_OR_RETURN_ERROR(rank <= static_cast<size_t>(kMaxTensorDim), InvalidProgram,
                              EMBER_BUNDLE_WHERE_FMT ": rank %zu is above %d", EMBER_BUNDLE_WHERE_ARGS(w), rank,
                              kMaxTensorDim);
  uint64_t bytes = element_size(static_cast<ScalarType>(type));
  for (size_t d = 0; d < rank; ++d) {
    const int32_t s = t->sizes()->Get(static_cast<flatbuffers::uoffset_t>(d));
    EMBER_CHECK_OR_RETURN_ERROR(s >= 0, InvalidProgram, EMBER_BUNDLE_WHERE_FMT ": dimension %zu is %d",
                                EMBER_BUNDLE_WHERE_ARGS(w), d, static_cast<int>(s));
    // A vector of a flatbuffer is under 2^32 bytes: a product past that can never match the data.
    bytes *= static_cast<uint64_t>(s);
    if (bytes > UINT32_MAX) bytes = uint64_t{UINT32_MAX} + 1;
  }
  const uint64_t have = t->data() == nullptr ? 0 : t->data()->size();
  EMBER_CHECK_OR_RETURN_ERROR(have == bytes, InvalidProgram,
                              EMBER_BUNDLE_WHERE_FMT ": its shape needs %llu bytes of data, the file has %llu",
                              EMBER_BUNDLE_WHERE_ARGS(w), static_cast<ull>(bytes), static_cast<ull>(have));
  // Elements are read contiguously in logical order: only the identity dim order (or none) is understood.
  if (t->dim_order() != nullptr && t->dim_order()->size() != 0) {
    EMBER_CHECK_OR_RETURN_ERROR(t->dim_order()->size() == rank, InvalidProgram,
                                EMBER_BUNDLE_WHERE_FMT ": dim_order has %u entries for rank %zu",
                                EMBER_BUNDLE_WHERE_ARGS(w), static_cast<unsigned>(t->dim_order()->size()), rank);
    for (size_t d = 0; d < rank; ++d) {
      EMBER_CHECK_OR_RETURN_ERROR(t->dim_order()->Get(static_cast<flatbuffers::uoffset_t>(d)) == d, NotSupported,
                                  EMBER_BUNDLE_WHERE_FMT ": dim_order is not contiguous (entry %zu is %u)",
                                  EMBER_BUNDLE_WHERE_ARGS(w), d,
                                  static_cast<unsigned>(t->dim_order()->Get(static_cast<flatbuffers::uoffset_t>(d))));
    }
  }
  return Error::Ok;
}

Error check_values(const flatbuffers::Vector<flatbuffers::Offset<fb::Value>>* values, Where w) {
  EMBER_CHECK_OR_RETURN_ERROR(values != nullptr, InvalidProgram, "method '%s' case %zu has no %s list", w.method,
                              w.test_case, w.what);
  for (w.index = 0; w.index < values->size(); ++w.index) {
    const fb::Value* v = values->Get(static_cast<flatbuffers::uoffset_t>(w.index));
    EMBER_CHECK_OR_RETURN_ERROR(v != nullptr && v->val() != nullptr, InvalidProgram, EMBER_BUNDLE_WHERE_FMT " is empty",
                                EMBER_BUNDLE_WHERE_ARGS(w));
    switch (v->val_type()) {
      case fb::ValueUnion::Tensor: EMBER_TRY(check_tensor(v->val_as_Tensor(), w)); break;
      case fb::ValueUnion::Int:
      case fb::ValueUnion::Bool:
      case fb::ValueUnion::Double: break;
      default:
        EMBER_LOG(ERROR, EMBER_BUNDLE_WHERE_FMT ": unknown value kind %d", EMBER_BUNDLE_WHERE_ARGS(w),
                  static_cast<int>(v->val_type()));
        return Error::InvalidProgram;
    }
  }
  return Error::Ok;
}

bool valid_tolerance(double t) { return t >= 0 && t <= 1e300; }  // false for NaN, which would pass everything

// One element as a double, read with memcpy: the bundled data is only as aligned as the file makes it.
double element_at(ScalarType type, const uint8_t* base, uint64_t index) {
  const uint8_t* p = base + index * element_size(type);
  switch (type) {
#define EMBER_BUNDLE_LOAD(st, cpp) \
  case ScalarType::st: {           \
    cpp v;                         \
    memcpy(&v, p, sizeof(v));      \
    return static_cast<double>(v); \
  }
    EMBER_BUNDLE_LOAD(Float, float)
    EMBER_BUNDLE_LOAD(Double, double)
    EMBER_BUNDLE_LOAD(Byte, uint8_t)
    EMBER_BUNDLE_LOAD(Char, int8_t)
    EMBER_BUNDLE_LOAD(Short, int16_t)
    EMBER_BUNDLE_LOAD(Int, int32_t)
    EMBER_BUNDLE_LOAD(Long, int64_t)
    EMBER_BUNDLE_LOAD(UInt16, uint16_t)
    EMBER_BUNDLE_LOAD(UInt32, uint32_t)
    EMBER_BUNDLE_LOAD(UInt64, uint64_t)
#undef EMBER_BUNDLE_LOAD
    case ScalarType::Half: {
      Half v;
      memcpy(&v, p, sizeof(v));
      return static_cast<float>(v);
    }
    case ScalarType::BFloat16: {
      BFloat16 v;
      memcpy(&v, p, sizeof(v));
      return static_cast<float>(v);
    }
    case ScalarType::Bool: return *p != 0 ? 1.0 : 0.0;
    default: return 0;
  }
}

// Compares one pair of elements, folding it into the report. `tolerant`: floating point (else exact).
void compare(double a, double e, bool tolerant, double atol, double rtol, size_t output, uint64_t index,
             CaseReport* r) {
  bool close;
  double error;
  if (isnan(a) || isnan(e)) {
    close = isnan(a) && isnan(e);
    error = close ? 0 : INFINITY;
  } else if (isinf(a) || isinf(e)) {
    close = a == e;
    error = close ? 0 : INFINITY;
  } else {
    error = fabs(a - e);
    close = tolerant ? error <= atol + rtol * fabs(e) : a == e;
  }
  ++r->elements;
  if (!close) {
    ++r->failed_elements;
    r->passed = false;
  }
  // The first element with the largest error (ties keep the earlier one).
  if (error > r->worst_error || (!close && r->failed_elements == 1 && error >= r->worst_error)) {
    r->worst_error = error;
    r->worst_output = output;
    r->worst_index = index;
    r->worst_actual = a;
    r->worst_expected = e;
  }
}

void mismatch(CaseReport* r, size_t output, const char* what) {
  r->passed = false;
  if (r->mismatch == nullptr) {
    r->mismatch = what;
    r->mismatch_output = output;
  }
}

}  // namespace

bool BundledProgram::is_bundled_program(const void* data, size_t size) {
  return data != nullptr && size >= 8 && fb::BundledProgramBufferHasIdentifier(data);
}

Result<BundledProgram> BundledProgram::parse(const void* data, size_t size) {
  EMBER_CHECK_OR_RETURN_ERROR(data != nullptr, InvalidArgument, "BundledProgram::parse needs the file's bytes");
  EMBER_CHECK_OR_RETURN_ERROR(size >= 8, InvalidProgram,
                              "not a bundled program: %zu bytes, fewer than a root offset and identifier take", size);
  EMBER_TRY(
      check_format_identifier(format_versions::kBpte, static_cast<const uint8_t*>(data) + 4, Error::InvalidProgram));
  EMBER_CHECK_OR_RETURN_ERROR(reinterpret_cast<uintptr_t>(data) % alignof(int64_t) == 0, InvalidArgument,
                              "the bundle's bytes at %p are not 8-byte aligned", data);
  const uint8_t* base = static_cast<const uint8_t*>(data);
  {
    flatbuffers::Verifier::Options options;
    options.max_depth = 16;
    options.max_tables = 10000000;
    flatbuffers::Verifier verifier(base, size, options);
    EMBER_CHECK_OR_RETURN_ERROR(fb::VerifyBundledProgramBuffer(verifier), InvalidProgram,
                                "the bundle's flatbuffer failed verification (%zu bytes): corrupt or truncated", size);
  }
  const fb::BundledProgram* root = fb::GetBundledProgram(base);
  EMBER_TRY(check_format_version(format_versions::kBpte, root->version()));
  const auto* program = root->program();
  EMBER_CHECK_OR_RETURN_ERROR(program != nullptr && program->size() > 0, InvalidProgram, "the bundle holds no program");
  // The verifier proved the vector lies inside the buffer; the .pte inside must keep the alignment its own
  // segments and tables were laid out for.
  const size_t offset = static_cast<size_t>(program->Data() - base);
  EMBER_CHECK_OR_RETURN_ERROR(offset % kProgramAlignment == 0, InvalidProgram,
                              "the embedded program starts at byte %zu of the bundle, not a multiple of %zu", offset,
                              kProgramAlignment);
  const auto* suites = root->method_test_suites();
  EMBER_CHECK_OR_RETURN_ERROR(suites != nullptr, InvalidProgram, "the bundle has no test suite list");
  for (flatbuffers::uoffset_t s = 0; s < suites->size(); ++s) {
    const fb::BundledMethodTestSuite* suite = suites->Get(s);
    EMBER_CHECK_OR_RETURN_ERROR(suite != nullptr && suite->method_name() != nullptr, InvalidProgram,
                                "test suite %u has no method name", static_cast<unsigned>(s));
    const char* method = suite->method_name()->c_str();
    EMBER_CHECK_OR_RETURN_ERROR(suite->test_cases() != nullptr, InvalidProgram,
                                "test suite of method '%s' has no test case list", method);
    EMBER_CHECK_OR_RETURN_ERROR(valid_tolerance(suite->atol()) && valid_tolerance(suite->rtol()), InvalidProgram,
                                "test suite of method '%s': tolerances atol %g, rtol %g (each must be in [0, 1e300])",
                                method, suite->atol(), suite->rtol());
    for (flatbuffers::uoffset_t c = 0; c < suite->test_cases()->size(); ++c) {
      const fb::BundledMethodTestCase* tc = suite->test_cases()->Get(c);
      EMBER_CHECK_OR_RETURN_ERROR(tc != nullptr, InvalidProgram, "method '%s' case %u is empty", method,
                                  static_cast<unsigned>(c));
      EMBER_TRY(check_values(tc->inputs(), Where{method, c, "input", 0}));
      EMBER_TRY(check_values(tc->expected_outputs(), Where{method, c, "expected output", 0}));
    }
  }
  return BundledProgram(root, program->Data(), program->size(), offset);
}

size_t BundledProgram::num_suites() const { return root_->method_test_suites()->size(); }

const char* BundledProgram::method_name(size_t suite) const {
  return suite < num_suites()
             ? root_->method_test_suites()->Get(static_cast<flatbuffers::uoffset_t>(suite))->method_name()->c_str()
             : "";
}

size_t BundledProgram::num_cases(size_t suite) const {
  return suite < num_suites()
             ? root_->method_test_suites()->Get(static_cast<flatbuffers::uoffset_t>(suite))->test_cases()->size()
             : 0;
}

double BundledProgram::atol(size_t suite) const {
  return suite < num_suites() ? root_->method_test_suites()->Get(static_cast<flatbuffers::uoffset_t>(suite))->atol()
                              : kDefaultAtol;
}

double BundledProgram::rtol(size_t suite) const {
  return suite < num_suites() ? root_->method_test_suites()->Get(static_cast<flatbuffers::uoffset_t>(suite))->rtol()
                              : kDefaultRtol;
}

namespace {

Result<const fb::BundledMethodTestCase*> find_case(const fb::BundledProgram* root, size_t suite, size_t test_case,
                                                   const Method& method) {
  const auto* suites = root->method_test_suites();
  EMBER_CHECK_OR_RETURN_ERROR(suite < suites->size(), InvalidArgument, "test suite %zu out of range (%u suites)", suite,
                              static_cast<unsigned>(suites->size()));
  const auto* s = suites->Get(static_cast<flatbuffers::uoffset_t>(suite));
  const flatbuffers::String* name = s->method_name();
  const size_t length = strlen(method.name());
  EMBER_CHECK_OR_RETURN_ERROR(name->size() == length && memcmp(name->data(), method.name(), length) == 0,
                              InvalidArgument, "test suite %zu is for method '%s', not '%s'", suite,
                              s->method_name()->c_str(), method.name());
  EMBER_CHECK_OR_RETURN_ERROR(test_case < s->test_cases()->size(), InvalidArgument,
                              "method '%s' case %zu out of range (%u cases)", method.name(), test_case,
                              static_cast<unsigned>(s->test_cases()->size()));
  return s->test_cases()->Get(static_cast<flatbuffers::uoffset_t>(test_case));
}

}  // namespace

Error BundledProgram::load_inputs(Method& method, size_t suite, size_t test_case) const {
  EMBER_TRY_ASSIGN(tc, find_case(root_, suite, test_case, method));
  const auto* inputs = tc->inputs();
  EMBER_CHECK_OR_RETURN_ERROR(inputs->size() == method.num_inputs(), InvalidArgument,
                              "method '%s' case %zu has %u inputs; the method takes %zu", method.name(), test_case,
                              static_cast<unsigned>(inputs->size()), method.num_inputs());
  for (flatbuffers::uoffset_t i = 0; i < inputs->size(); ++i) {
    const fb::Value* v = inputs->Get(i);
    EMBER_CHECK_OR_RETURN_ERROR(v->val_type() == fb::ValueUnion::Tensor, NotSupported,
                                "method '%s' case %zu input %u is a scalar; Ember methods take tensors", method.name(),
                                test_case, static_cast<unsigned>(i));
    const fb::Tensor* t = v->val_as_Tensor();
    const uint8_t* bytes = t->data() == nullptr ? nullptr : t->data()->Data();
    const size_t nbytes = t->data() == nullptr ? 0 : t->data()->size();
    EMBER_TRY(method.set_input(i, static_cast<ScalarType>(t->scalar_type()),
                               ArrayRef<int32_t>(t->sizes()->data(), t->sizes()->size()), bytes, nbytes));
  }
  return Error::Ok;
}

Error BundledProgram::check_outputs(const Method& method, size_t suite, size_t test_case, double atol, double rtol,
                                    CaseReport* report) const {
  EMBER_CHECK_OR_RETURN_ERROR(report != nullptr, InvalidArgument, "check_outputs needs a report to fill");
  EMBER_CHECK_OR_RETURN_ERROR(valid_tolerance(atol) && valid_tolerance(rtol), InvalidArgument,
                              "tolerances atol %g, rtol %g: each must be in [0, 1e300]", atol, rtol);
  EMBER_TRY_ASSIGN(tc, find_case(root_, suite, test_case, method));
  const auto* expected = tc->expected_outputs();
  EMBER_CHECK_OR_RETURN_ERROR(expected->size() == method.num_outputs(), InvalidArgument,
                              "method '%s' case %zu has %u expected outputs; the method returns %zu", method.name(),
                              test_case, static_cast<unsigned>(expected->size()), method.num_outputs());
  *report = CaseReport();
  for (flatbuffers::uoffset_t o = 0; o < expected->size(); ++o) {
    const fb::Value* want = expected->Get(o);
    EMBER_TRY_ASSIGN(got, method.output_value(o));
    ++report->outputs;
    switch (want->val_type()) {
      case fb::ValueUnion::Tensor: {
        const fb::Tensor* t = want->val_as_Tensor();
        if (!got.is_tensor()) {
          mismatch(report, o, "a scalar where a tensor was expected");
          break;
        }
        const Tensor& actual = got.as_tensor();
        const ScalarType type = static_cast<ScalarType>(t->scalar_type());
        if (actual.scalar_type() != type) {
          mismatch(report, o, "another dtype");
          break;
        }
        const ArrayRef<int32_t> sizes = actual.sizes();
        bool same = sizes.size() == t->sizes()->size();
        for (size_t d = 0; same && d < sizes.size(); ++d) {
          same = sizes[d] == t->sizes()->Get(static_cast<flatbuffers::uoffset_t>(d));
        }
        if (!same) {
          mismatch(report, o, "another shape");
          break;
        }
        const bool tolerant = is_floating(type);
        const uint8_t* a = static_cast<const uint8_t*>(actual.const_data_ptr());
        const uint8_t* e = t->data() == nullptr ? nullptr : t->data()->Data();
        for (int64_t k = 0; k < actual.numel(); ++k) {
          compare(element_at(type, a, static_cast<uint64_t>(k)), element_at(type, e, static_cast<uint64_t>(k)),
                  tolerant, atol, rtol, o, static_cast<uint64_t>(k), report);
        }
        break;
      }
      case fb::ValueUnion::Int:
        if (!got.is_int()) {
          mismatch(report, o, "another kind than the expected Int");
          break;
        }
        // Exact, as 64-bit integers: two that differ above 2^53 can be equal as doubles.
        if (got.as_int() != want->val_as_Int()->int_val() &&
            static_cast<double>(got.as_int()) == static_cast<double>(want->val_as_Int()->int_val())) {
          report->passed = false;
          ++report->failed_elements;
        }
        compare(static_cast<double>(got.as_int()), static_cast<double>(want->val_as_Int()->int_val()), false, 0, 0, o,
                0, report);
        break;
      case fb::ValueUnion::Bool:
        if (!got.is_bool()) {
          mismatch(report, o, "another kind than the expected Bool");
          break;
        }
        compare(got.as_bool() ? 1 : 0, want->val_as_Bool()->bool_val() ? 1 : 0, false, 0, 0, o, 0, report);
        break;
      case fb::ValueUnion::Double:
        if (!got.is_double()) {
          mismatch(report, o, "another kind than the expected Double");
          break;
        }
        compare(got.as_double(), want->val_as_Double()->double_val(), true, atol, rtol, o, 0, report);
        break;
      default:
        // parse() admitted only the four kinds above.
        mismatch(report, o, "an unknown kind");
        break;
    }
  }
  return Error::Ok;
}

}  // namespace bundled
}  // namespace ember
