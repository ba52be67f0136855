#include "gpubench/core/record/profile_record.hpp"

#include <tuple>

namespace gpubench {


}  // namespace gpubench
