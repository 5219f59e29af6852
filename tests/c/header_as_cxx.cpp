// The public header must compile as C++ (-pedantic -Werror) as well as C99.
#include "wharf/wharf.h"

static_assert(sizeof(wharf_tensor_view) > 0, "header usable from C++");
