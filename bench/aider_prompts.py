"""Aider's benchmark prompts, copied verbatim from Aider's `benchmark/prompts.py`.

Source: https://github.com/Aider-AI/aider, benchmark/prompts.py at commit
f5a512ba656ab109356f6ab53aaf039423c1d189 (unchanged at 5dc9490bb35f9729ef2c95d00a19ccd30c26339c).
Copyright Paul Gauthier and Aider's contributors. Licensed under the Apache License, Version 2.0
(the "License"); you may not use this file except in compliance with the License. A copy of the
License is in bench/LICENSE.aider.txt (Aider's LICENSE.txt), or at
http://www.apache.org/licenses/LICENSE-2.0. Unless required by applicable law or agreed to in
writing, software distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the License for the specific
language governing permissions and limitations under the License.

Changes: this docstring was added and the `# noqa: E501` after the first string dropped (unused
here); the two strings are Aider's, character for character.
How Aider's benchmark uses them (benchmark/benchmark.py, `run_test_real`): the first message is
the exercise's `.docs/introduction.md` + `instructions.md` + `instructions.append.md` followed by
`instructions_addendum.format(file_list=<the stub's file name>)`; after a failed test run the next
message is the test output followed by `test_failures.format(file_list=…)`.
"""

instructions_addendum = """
####

Use the above instructions to modify the supplied files: {file_list}
Don't change the names of existing functions or classes, as they may be referenced from other code like unit tests, etc.
Only use standard libraries, don't suggest installing any packages.
"""


test_failures = """
####

See the testing errors above.
The tests are correct, don't try and change them.
Fix the code in {file_list} to resolve the errors.
"""
