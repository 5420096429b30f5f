/* ember.h must compile as C89 (with <stdint.h>) under -pedantic: a C compiler of any age can use it. */
#include <ember/ember.h>

ember_status ember_header_c89_check(void);
ember_status ember_header_c89_check(void) {
  ember_tensor t;
  ember_tensor_init(&t);
  return t.rank == 0 ? EMBER_OK : EMBER_INTERNAL;
}
