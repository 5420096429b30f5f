// EmberPortable: a delegate backend whose processed blob is itself a .pte program (one method), run by this
// runtime's own kernels. It is how the delegate interface is tested end to end without hardware, and how a
// partition can be handed to a separately verified, separately planned sub-program. Its id is "EmberPortable";
// backends.ember_portable writes its blobs.
#pragma once

#include "runtime/backend/backend.h"

namespace ember {
namespace ember_portable {

extern const Backend kBackend;

}  // namespace ember_portable
}  // namespace ember
