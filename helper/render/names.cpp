#include "render/names.h"
