// What a member pointer in a RunSchema.h table row reaches in a record, as types: the code that iterates the
// tables (RunWriter, Hdf5RunReader, RecordWire.h, CsvExport) decides per row, at compile time, how to copy
// the values. A value is one element (a number, an enum, a string), a vector of them (a whole row, or one
// rank's part of a row), or a vector of vectors ([rank][element]).
#pragma once

#include <string>
#include <type_traits>
#include <vector>

namespace rs::fields {

// V C::* -> the value type V and the record C that holds it.
template <class M> struct Member;
template <class V, class C> struct Member<V C::*> {
    using Value = V;
    using Record = C;
};
template <class M> using ValueOf = typename Member<M>::Value;
template <class M> using RecordOf = typename Member<M>::Record;

template <class T> inline constexpr bool kIsVector = false;
template <class T, class A> inline constexpr bool kIsVector<std::vector<T, A>> = true;

// How deep the vectors go: 0 one element, 1 a vector, 2 a vector of vectors.
template <class V> inline constexpr int kDepth = 0;
template <class T, class A> inline constexpr int kDepth<std::vector<T, A>> = 1 + kDepth<T>;

// The element a value is made of: T for T, std::vector<T> and std::vector<std::vector<T>>.
template <class V> struct ElementOf { using type = V; };
template <class T, class A> struct ElementOf<std::vector<T, A>> { using type = typename ElementOf<T>::type; };
template <class V> using Element = typename ElementOf<V>::type;

// The element as it is stored: numbers as they are, an enum as its underlying integer.
template <class T> struct StoredOf { using type = T; };
template <class T>
requires std::is_enum_v<T>
struct StoredOf<T> {
    using type = std::underlying_type_t<T>;
};
template <class T> using Stored = typename StoredOf<T>::type;

template <class T> inline constexpr bool kIsString = std::is_same_v<T, std::string>;

} // namespace rs::fields
