// Every template dietcode knows. A new template adds its space function here (and its
// declaration to templates.h); the search, code generation and the CLI find it by name.
#include "common/error.h"
#include "space/dense_tc_space.h"
#include "space/template_space.h"
#include "space/templates.h"

namespace dietcode {

const std::vector<const TemplateSpace*>& all_template_spaces() {
  static const std::vector<const TemplateSpace*> all = {
      &dense_f32_space(),     &batch_matmul_f32_space(), &conv2d_f32_space(),
      &dense_tc_space(),      &dense_wgmma_space(),      &x86_avx2_f32_space(),
      &x86_avx512_f32_space(), &x86_avx2_dot_f32_space(), &x86_avx512_dot_f32_space(),
      &x86_avx2_wbcast_f32_space(), &x86_avx512_wbcast_f32_space()};
  return all;
}

std::vector<const TemplateSpace*> template_spaces_for(const OpSpec& op, Target target) {
  std::vector<const TemplateSpace*> out;
  for (const TemplateSpace* space : all_template_spaces())
    if (space->target == target && space->supports(op)) out.push_back(space);
  return out;
}

const TemplateSpace& template_space(const std::string& tmpl) {
  for (const TemplateSpace* space : all_template_spaces())
    if (space->tmpl == tmpl) return *space;
  throw UserError("unknown template \"" + tmpl + "\"");
}

}  // namespace dietcode
