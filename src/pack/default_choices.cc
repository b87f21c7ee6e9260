// Choices without tuning: each op's first supporting template at its default tunables. The
// pack is slower than a tuned one but correct for every shape (micro-kernels are shape-generic).
#include "common/error.h"
#include "pack/choices.h"
#include "space/template_space.h"

namespace dietcode {
namespace {

class DefaultChoices : public ChoicesProvider {
 public:
  explicit DefaultChoices(Target target) : target_(target) {}

  std::string description() const override { return "untuned (template defaults)"; }
  std::optional<Target> target() const override { return target_; }

  OpChoices choices(const Workload& workload, const OpSpec& op) override {
    std::vector<const TemplateSpace*> spaces = template_spaces_for(op, target_);
    if (spaces.empty())
      throw UserError(workload.source + ": ops[" + std::to_string(&op - workload.ops.data()) +
                      "]: no " + to_string(target_) + " kernel template computes " +
                      to_string(op.kind) + " " + to_string(op.dtype));
    OpChoices out;
    out.candidates.push_back(spaces.front()->defaults());
    return out;
  }

 private:
  Target target_;
};

}  // namespace

std::unique_ptr<ChoicesProvider> make_default_choices(Target target) {
  return std::make_unique<DefaultChoices>(target);
}

}  // namespace dietcode
