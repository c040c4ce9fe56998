// shell_words: POSIX-shell word splitting without expansion (see shell_words.h).
#include "launcher/shell_words.h"

bool split_shell_words(const std::string& s, std::vector<std::string>* words, std::string* why) {
  words->clear();
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words->push_back(cur);
      cur.clear();
      in_word = false;
    } else if (c == '\\') {
      if (i + 1 >= s.size()) {
        *why = "trailing backslash at column " + std::to_string(i + 1);
        return false;
      }
      if (s[i + 1] != '\n') cur += s[i + 1];  // backslash-newline joins lines
      ++i;
      in_word = true;
    } else if (c == '\'') {
      size_t end = s.find('\'', i + 1);
      if (end == std::string::npos) {
        *why = "unclosed ' at column " + std::to_string(i + 1);
        return false;
      }
      cur += s.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size() && std::string("\"\\$`\n").find(s[j + 1]) != std::string::npos) {
          if (s[j + 1] != '\n') cur += s[j + 1];
          ++j;
        } else {
          cur += s[j];
        }
      }
      if (j >= s.size()) {
        *why = "unclosed \" at column " + std::to_string(i + 1);
        return false;
      }
      i = j;
      in_word = true;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) words->push_back(cur);
  return true;
}

bool is_shell_identifier(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name)
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
  return true;
}
