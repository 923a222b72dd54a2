#include "render/helper_names.h"


namespace xref::render {
namespace {

std::string name_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

struct HelperNames::Module {
  std::shared_ptr<const ElfImage> image;  // null: the module could not be opened
  const xref::Module* mapped = nullptr;   // in a live process: its lines through ModuleLines
  std::string lines_path;                 // else the file whose DWARF (or debug file) gives lines
  std::optional<SourceLines> lines;       // opened at the first address asked for
  bool lines_opened = false;
};

std::optional<SourceLine> HelperNames::line_at(Module& module, uint64_t static_va) {
  if (module.mapped != nullptr) return module_lines_.at(*module.mapped, static_va);
  if (!module.lines_opened) {
    module.lines_opened = true;
    // A file without lines, or one that cannot be read, names functions only.
    if (auto opened = SourceLines::open(module.lines_path)) module.lines = std::move(*opened);
  }
  return module.lines ? module.lines->at(static_va) : std::nullopt;
}

HelperNames::HelperNames(const AddressSpace& space) : space_(&space) {}

HelperNames::HelperNames(std::shared_ptr<const ElfImage> executable) {
  auto module = std::make_unique<Module>();
  if (executable) module->lines_path = executable->path();
  module->image = std::move(executable);
  modules_.emplace("", std::move(module));
  executable_name_ = name_of(modules_.at("")->lines_path);
}

HelperNames::~HelperNames() = default;

HelperNames::Module* HelperNames::module(const std::string& given) {
  // A document may name the executable by its file name ("sample_service").
  const std::string name = !executable_name_.empty() && given == executable_name_ ? std::string() : given;
  if (auto found = modules_.find(name); found != modules_.end()) return found->second.get();
  auto module = std::make_unique<Module>();
  if (space_ != nullptr) {
    const xref::Module* mapped = name.empty() ? space_->main_module() : space_->find_module(name);
    if (mapped != nullptr) {
      if (auto image = space_->image(*mapped)) module->image = std::move(*image);
      module->mapped = mapped;
    }
  }
  return modules_.emplace(name, std::move(module)).first->second.get();
}

std::optional<std::pair<std::string, uint64_t>> HelperNames::static_of(const CodeAddress& address) const {
  if (address.static_va) return std::make_pair(address.module, *address.static_va);
  if (!address.live || space_ == nullptr) return std::nullopt;
  const LiveAddress live = space_->resolve_live(*address.live);
  if (live.candidates.empty() || live.candidates.front().module == nullptr) return std::nullopt;
  const xref::Module& module = *live.candidates.front().module;
  return std::make_pair(module.main_executable ? std::string() : module.name(), live.candidates.front().static_va);
}

std::optional<Place> HelperNames::name(const std::string& module_name, uint64_t static_va) {
  Module* module = this->module(module_name);
  if (module->image == nullptr) return std::nullopt;
  Place place;
  if (const FunctionSymbol* function = module->image->function_containing(static_va)) {
    if (!function->is_fde_range()) {
      place.function = function->demangled;
      place.offset = static_va - function->start;
    }
  }
  if (auto line = line_at(*module, static_va)) {
    place.file = line->file;
    place.line = line->line;
  }
  if (place.function.empty() && place.line == 0) return std::nullopt;
  return place;
}

std::optional<Place> HelperNames::place(const CodeAddress& address) {
  const auto at = static_of(address);
  if (!at) return std::nullopt;
  auto [slot, added] = places_.try_emplace(*at);
  if (added) slot->second = name(at->first, at->second);
  return slot->second;
}

}  // namespace xref::render
