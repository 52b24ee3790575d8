// Chat rows: an hh-rlhf row as turns (chat_messages, as rmbench.models.build.chat_messages makes them)
// and the turns as text by a chat form (ChatForm, compiled from the model's template by
// rmbench.models.chat_form, whose render() this mirrors).
#include <fstream>
#include <nlohmann/json.hpp>

#include "errors.h"
#include "tokenizer.h"
#include "unicode.h"

namespace rmscore {

namespace {

// A turn's content as the form's edit for its kind leaves it (rmbench.models.chat_form.EDITS).
std::string edited(const std::string& content, const std::string& edit) {
  if (edit == "none") return content;
  if (edit == "lstrip_newlines") return content.substr(std::min(content.find_first_not_of('\n'), content.size()));
  Codepoints c = decode_utf8(content);  // strip: Python's str.strip, as Jinja's trim
  size_t a = 0, b = c.size();
  while (a < b && is_python_space(c[a])) ++a;
  while (b > a && is_python_space(c[b - 1])) --b;
  std::string out;
  for (size_t k = a; k < b; ++k) append_utf8(out, c[k]);
  return out;
}

}  // namespace

ChatForm ChatForm::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ExitCode::missing_file, "chat form not found: " + path);
  auto spec = nlohmann::json::parse(in, nullptr, false);
  if (!spec.is_object() || !spec.contains("glue") || !spec.contains("edits"))
    throw Error(ExitCode::mismatch, path + " is not a chat form (rmbench.models.chat_form)");
  ChatForm form;
  for (const auto& [key, text] : spec.at("glue").items()) form.glue_[key] = text.get<std::string>();
  for (const auto& [kind, edit] : spec.at("edits").items()) {
    std::string name = edit.get<std::string>();
    if (name != "none" && name != "strip" && name != "lstrip_newlines")
      throw Error(ExitCode::mismatch, "chat form edit '" + name + "' is not one the engine knows");
    form.edits_[kind] = name;
  }
  return form;
}

const std::string& ChatForm::glue(const std::string& before, const std::string& after) const {
  auto it = glue_.find(before + ">" + after);
  if (it == glue_.end())
    throw Error(ExitCode::malformed_input, "the chat template renders no " + before + " turn followed by " + after);
  return it->second;
}

std::string ChatForm::render(const Messages& messages) const {
  std::string text, previous = "start";
  for (size_t i = 0; i < messages.size(); ++i) {
    std::string kind = i + 1 == messages.size() ? "final" : messages[i].first;
    auto edit = edits_.find(kind);
    if (edit == edits_.end()) throw Error(ExitCode::malformed_input, "the chat form has no edit for a " + kind + " turn");
    text += glue(previous, kind) + edited(messages[i].second, edit->second);
    previous = kind;
  }
  return text + glue(previous, "end");
}

Messages chat_messages(const std::string& prompt, const std::string& response) {
  static const std::string kHuman = "\n\nHuman:", kAssistant = "\n\nAssistant:";
  auto strip = [](const std::string& s) { return edited(s, "strip"); };
  // re.split on the turn markers: the text before the first, then (role, text) per turn
  Messages messages;
  std::string before;
  size_t pos = 0, text_start = 0;
  std::string role;
  bool in_turn = false;
  while (pos < prompt.size()) {
    size_t h = prompt.find(kHuman, pos), a = prompt.find(kAssistant, pos);
    size_t at = std::min(h, a);
    if (at == std::string::npos) break;
    std::string text = prompt.substr(text_start, at - text_start);
    if (in_turn) messages.emplace_back(role, strip(text));
    else before = text;
    role = at == h ? "user" : "assistant";
    in_turn = true;
    pos = text_start = at + (at == h ? kHuman.size() : kAssistant.size());
  }
  std::string rest = prompt.substr(text_start);
  if (in_turn) messages.emplace_back(role, strip(rest));
  else before = rest;
  if (!messages.empty() && messages.back().first == "assistant" && messages.back().second.empty()) messages.pop_back();
  std::string opening = strip(before);
  if (!opening.empty() || messages.empty()) {
    if (!messages.empty() && messages.front().first == "user") messages.front().second = opening + "\n" + messages.front().second;
    else messages.insert(messages.begin(), {"user", opening});
  }
  messages.emplace_back("assistant", response);
  return messages;
}

}  // namespace rmscore
