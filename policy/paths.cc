// filled in by the policy engine work
