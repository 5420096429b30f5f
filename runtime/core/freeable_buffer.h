// Bytes a DataLoader handed out, with the function (if any) that gives them back. Move-only; freed once.
#pragma once

#include <stddef.h>

namespace ember {

class FreeableBuffer {
 public:
  using FreeFn = void (*)(void* context, const void* data, size_t size);

  FreeableBuffer() = default;
  FreeableBuffer(const void* data, size_t size, FreeFn free_fn = nullptr, void* context = nullptr)
      : data_(data), size_(size), free_fn_(free_fn), context_(context) {}
  FreeableBuffer(FreeableBuffer&& other)
      : data_(other.data_), size_(other.size_), free_fn_(other.free_fn_), context_(other.context_) {
    other.release();
  }
  FreeableBuffer& operator=(FreeableBuffer&& other) {
    if (this != &other) {
      free();
      data_ = other.data_;
      size_ = other.size_;
      free_fn_ = other.free_fn_;
      context_ = other.context_;
      other.release();
    }
    return *this;
  }
  FreeableBuffer(const FreeableBuffer&) = delete;
  FreeableBuffer& operator=(const FreeableBuffer&) = delete;
  ~FreeableBuffer() { free(); }

  const void* data() const { return data_; }
  size_t size() const { return size_; }

  void free() {
    if (free_fn_ != nullptr) free_fn_(context_, data_, size_);
    release();
  }

 private:
  void release() {
    data_ = nullptr;
    size_ = 0;
    free_fn_ = nullptr;
    context_ = nullptr;
  }

  const void* data_ = nullptr;
  size_t size_ = 0;
  FreeFn free_fn_ = nullptr;
  void* context_ = nullptr;
};

}  // namespace ember
