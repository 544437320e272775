// Operator commands contributed by domain modules register themselves by being imported here.
export {};
